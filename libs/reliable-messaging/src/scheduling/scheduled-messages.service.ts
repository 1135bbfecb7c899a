import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfigurationError } from '../errors/configuration.error';
import { TransactionContext } from '../database/transaction-context.service';
import { cancelTarget, type CancelTarget } from './cancel-target';
import {
  ScheduledStore,
  type ScheduledBacklog,
  type ScheduledListFilter,
  type ScheduledRow,
} from './scheduled-store.service';

const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 1000;
/** The longest idempotency key or type a filter may name, as the envelope allows. */
const MAX_KEY_LENGTH = 256;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Options of `ScheduledMessages.cancel()`. */
export interface CancelOptions {
  /** The transaction to cancel in. Default: the transaction active in async context, else none (the delete commits at once). */
  manager?: EntityManager;
}

/** Options of `ScheduledMessages.list()`: how many rows, and which. */
export interface ScheduledListOptions extends ScheduledListFilter {
  /** The most rows, 1 to 1000. Default: 100. */
  limit?: number;
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

  /**
   * The waiting messages, the first due first, up to `limit` (1 to 1000; default 100). Given options, only those
   * that match every filter given, and only after `after` (the id and due time of the last row of the previous
   * page): each page is one walk of the delivery-time index.
   */
  async list(options: number | ScheduledListOptions = DEFAULT_LIST_LIMIT): Promise<ScheduledRow[]> {
    this.requireDataSource();
    const { limit = DEFAULT_LIST_LIMIT, ...filter } =
      typeof options === 'number' ? { limit: options } : options;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new ConfigurationError(
        `list(): limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${limit}`,
      );
    }
    return this.store.list(limit, checkedFilter(filter));
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

/** The filter checked before it reaches a query: a message id is a UUID, texts are short, times are valid. */
function checkedFilter(filter: ScheduledListFilter): ScheduledListFilter {
  const text = (name: string, value: unknown): void => {
    if (
      value !== undefined &&
      (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY_LENGTH)
    ) {
      throw new ConfigurationError(`list(): ${name} must be a string of 1 to ${MAX_KEY_LENGTH} characters`);
    }
  };
  const time = (name: string, value: unknown): void => {
    if (value !== undefined && !(value instanceof Date && Number.isFinite(value.getTime()))) {
      throw new ConfigurationError(`list(): ${name} must be a valid Date`);
    }
  };
  text('idempotencyKey', filter.idempotencyKey);
  text('type', filter.type);
  time('dueBefore', filter.dueBefore);
  if (
    filter.messageId !== undefined &&
    (typeof filter.messageId !== 'string' || !UUID.test(filter.messageId))
  ) {
    throw new ConfigurationError('list(): messageId must be a UUID, as publish() returned it in its receipt');
  }
  if (filter.after !== undefined) {
    time('after.deliverAt', filter.after.deliverAt);
    if (typeof filter.after.id !== 'string' || !/^[1-9]\d{0,18}$/.test(filter.after.id)) {
      throw new ConfigurationError('list(): after.id must be a scheduled row id (digits)');
    }
  }
  return filter;
}
