import type { ConfirmChannel } from 'amqplib';
import type { MessagingNames } from '../config/messaging-names';
import type { DemoLedger } from './demo-ledger';
import type { OrderApiClient } from './order-api.client';

/** What a step can reach: the app's HTTP API, the broker (bypassing the app), and the ledger it writes to. */
export interface DemoContext {
  api: OrderApiClient;
  /** A confirm channel of the demo's own connection. */
  channel: ConfirmChannel;
  names: MessagingNames;
  ledger: DemoLedger;
  /** Aborted when the demo is interrupted. */
  signal: AbortSignal;
}

/**
 * One thing the demo does to the running app. Steps run at the same time, so bad input arrives among good
 * orders; each records in the ledger what it expects to see at the end.
 */
export interface DemoStep {
  /** Shown when the demo starts, e.g. `300 orders through POST /orders, 20 at a time`. */
  readonly title: string;
  run(context: DemoContext): Promise<void>;
}
