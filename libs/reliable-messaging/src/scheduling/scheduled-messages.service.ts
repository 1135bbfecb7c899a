import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfigurationError } from '../errors/configuration.error';
import { TransactionContext } from '../database/transaction-context.service';
import { cancelTarget, type CancelTarget } from './cancel-target';
import { ScheduledStore, type ScheduledBacklog, type ScheduledRow } from './scheduled-store.service';

const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 1000;

/** Options of `ScheduledMessages.cancel()`. */
export interface CancelOptions {
  /** The transaction to cancel in. Default: the transaction active in async context, else none (the delete commits at once). */
  manager?: EntityManager;
}

/**
 * The messages published with `deliverAt` or `delayMs` that are not due yet: cancel them, count them, list them.
 * Needs the `dataSource` option (see docs/scheduling.md).
 */
@Injectable()
export class ScheduledMessages {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: ScheduledStore,
    private readonly transactions: TransactionContext,
  ) {}

  /**
   * Cancels a scheduled message by the `messageId` its publish returned, or every scheduled message of an
   * `idempotencyKey`; resolves with how many were cancelled. In `options.manager`'s transaction, else the current
   * one, else on its own. Only a message still waiting can be cancelled: once due it has entered the outbox and
   * will be sent, and this resolves with 0, as for an id nobody scheduled. A promotion running at the same moment
   * is waited for, so 0 then means the message was already on its way.
   */
  async cancel(target: CancelTarget, options: CancelOptions = {}): Promise<number> {
    const checked = cancelTarget(target);
    this.requireDataSource();
    const manager = options.manager ?? (await this.transactions.currentManager());
    if (manager && manager.connection !== this.options.dataSource) {
      throw new ConfigurationError(
        "cancel(): the transaction belongs to another DataSource than the module's dataSource option",
      );
    }
    return this.store.cancel(checked, manager);
  }

  /**
   * How many messages wait (exact up to 100,000, an estimate from the table's size above) and how many seconds the
   * most overdue one is late (0 when none is): a growing lateness means no process promotes them.
   */
  async backlog(): Promise<ScheduledBacklog> {
    this.requireDataSource();
    return this.store.backlog();
  }

  /** The waiting messages, the first due first, up to `limit` (1 to 1000). Default: 100. */
  async list(limit = DEFAULT_LIST_LIMIT): Promise<ScheduledRow[]> {
    this.requireDataSource();
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new ConfigurationError(
        `list(): limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${limit}`,
      );
    }
    return this.store.list(limit);
  }

  private requireDataSource(): void {
    if (!this.options.dataSource) {
      throw new ConfigurationError(
        'ReliableMessaging: scheduled messages live in the outbox database; set the dataSource option ' +
          "(messages scheduled in the broker's delay levels, scheduling.brokerDelays, cannot be cancelled)",
      );
    }
  }
}
