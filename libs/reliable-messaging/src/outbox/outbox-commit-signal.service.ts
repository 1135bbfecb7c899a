import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager, EntitySubscriberInterface, QueryRunner } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { CoalescedNotify } from '../database/coalesced-notify';
import { OutboxRelay } from './outbox-relay.service';
import type { OutboundMessage } from '../envelope/envelope';
import { OUTBOX_CHANNEL } from './outbox-store.service';

/**
 * What one open transaction wrote to the outbox so far, as far as keeping its rows without an ordering key in
 * order needs it (see OutboxWriter): the key they share once there are two of them, or the one row that has none
 * yet.
 */
export interface TransactionWrites {
  /** The key the transaction's rows without one of their own share; unset while it wrote at most one such row. */
  group?: string;
  /** The ids of its rows written without any key (one at most: a second gets both the group key). */
  ungrouped: string[];
  /** Messages held to be written with the transaction's COMMIT (see OutboxWriter), in their order. */
  held: OutboundMessage[];
  /** Writes the held messages now: before a savepoint opens, so that they do not roll back with it. */
  writeHeld?: () => Promise<void>;
}

/**
 * Wakes the relay right after a transaction that wrote outbox rows commits, through TypeORM's
 * `afterTransactionCommit` event on the module's DataSource, from `start()` to `stop()` (MessagingLifecycle calls
 * both). When this process relays, the relay is woken in process. When it doesn't (`outbox.relay: false`, the relay
 * runs elsewhere), a NOTIFY is sent after the commit, and relay processes LISTENing hear it. NOTIFYs are coalesced
 * (one in flight, at most one per NOTIFY_INTERVAL_MS, so a busy writer sends about a hundred a second rather than
 * one per commit) and committed asynchronously (`synchronous_commit` off for that statement alone: a lost
 * notification only delays rows to the relays' next poll), so they cost the database little.
 *
 * NOTE: the NOTIFY is deliberately not sent inside the writing transaction, though PostgreSQL would deliver it
 * only on commit: a transaction that has NOTIFYed holds a database-wide lock from its commit until the commit
 * is durable, so every writing transaction would wait for the previous one's fsync. Measured here, that capped
 * the app at about 1000 transactions/s whatever their size (see docs/benchmarks.md).
 */
@Injectable()
export class OutboxCommitSignal {
  private readonly logger = new Logger('ReliableMessaging');
  /** The open transactions that wrote outbox rows, by their query runner; forgotten at commit or rollback. */
  private readonly writers = new WeakMap<QueryRunner, TransactionWrites>();
  private readonly subscriber: EntitySubscriberInterface = {
    // TypeORM opens a savepoint for a transaction started inside one, and tells its subscribers first.
    beforeTransactionStart: (event) => this.writers.get(event.queryRunner)?.writeHeld?.(),
    afterTransactionCommit: (event) => this.ended(event.queryRunner, true),
    afterTransactionRollback: (event) => this.ended(event.queryRunner, false),
  };
  private readonly notify = new CoalescedNotify(
    OUTBOX_CHANNEL,
    this.logger,
    (reason) => `could not notify the outbox relays (${reason}); they will find the rows by polling`,
  );

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly relay: OutboxRelay,
  ) {}

  /** Subscribes to the DataSource's transaction events. */
  start(): void {
    const subscribers = this.options.dataSource?.subscribers;
    if (subscribers && !subscribers.includes(this.subscriber)) subscribers.push(this.subscriber);
  }

  /** Unsubscribes, then waits for the NOTIFY in flight, if any. */
  async stop(): Promise<void> {
    const subscribers = this.options.dataSource?.subscribers;
    const index = subscribers?.indexOf(this.subscriber) ?? -1;
    if (subscribers && index >= 0) subscribers.splice(index, 1);
    await this.notify.settled();
  }

  /**
   * What `manager`'s transaction wrote to the outbox so far, recorded by `wrote()`; undefined before its first
   * write (or for a manager without a query runner of its own).
   */
  writesOf(manager: EntityManager): TransactionWrites | undefined {
    return manager.queryRunner ? this.writers.get(manager.queryRunner) : undefined;
  }

  /** Records that `manager`'s transaction wrote outbox rows, and how far: its commit wakes the relay. */
  wrote(manager: EntityManager, writes: TransactionWrites): void {
    if (manager.queryRunner) this.writers.set(manager.queryRunner, writes);
  }

  private ended(runner: QueryRunner, committed: boolean): void {
    if (runner.isTransactionActive || !this.writers.has(runner)) return;
    this.writers.delete(runner);
    if (!committed) return;
    if (this.relay.enabled) this.relay.wake();
    else this.notifyRelays();
  }

  private notifyRelays(): void {
    const dataSource = this.options.dataSource;
    if (dataSource) this.notify.ask(dataSource);
  }
}
