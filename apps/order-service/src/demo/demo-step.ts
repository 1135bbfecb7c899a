import type { ChannelModel, ConfirmChannel } from 'amqplib';
import type { Pool } from 'pg';
import type { MessagingNames } from '../config/messaging-names';
import type { DemoLedger } from './demo-ledger';
import type { OrderApiClient } from './order-api.client';

/** What a step can reach: the app's HTTP API, the broker (bypassing the app), and the ledger it writes to. */
export interface DemoContext {
  api: OrderApiClient;
  /** A confirm channel of the demo's own connection. */
  channel: ConfirmChannel;
  /** The demo's own broker connection, for channels of a step's own. */
  model: ChannelModel;
  names: MessagingNames;
  /** The run's own database, the app's: orders, outbox, inbox and dead-letter audit. */
  database: Pool;
  /** The environment the app was started with (`DATABASE_URL`, `MESSAGING_NAMESPACE`, the steps' `appEnv`). */
  appEnv: Readonly<Record<string, string>>;
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
  /** Variables the app must be started with for this step, e.g. `{ RECEIPT_FAILURE_RATE: '0.2' }`. Default: none. */
  readonly appEnv?: Readonly<Record<string, string>>;
  run(context: DemoContext): Promise<void>;
}
