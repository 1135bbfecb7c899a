import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager, EntitySubscriberInterface, QueryRunner } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { CoalescedNotify } from '../database/coalesced-notify';
import { ScheduledPromoter } from './scheduled-promoter.service';
import { SCHEDULED_CHANNEL } from './scheduled-store.service';

/**
 * Tells the promoters, once a transaction that scheduled messages commits, when the earliest of them is due, so
 * that a row due sooner than their next look is promoted on time: this process's promoter in process; where this
 * process does not promote, the others by a NOTIFY on SCHEDULED_CHANNEL, sent only for a row due within
 * `outbox.pollIntervalMs` (a promoter looks at least that often anyway), coalesced (CoalescedNotify) with
 * the earliest due time of the commits since the last. Through TypeORM's transaction events on
 * the module's DataSource, from `start()` to `stop()` (MessagingLifecycle calls both), as OutboxCommitSignal.
 *
 * NOTE: the NOTIFY is sent after the commit, not in the transaction, for the reason OutboxCommitSignal gives: a
 * transaction that NOTIFYs holds a database-wide lock through its commit.
 */
@Injectable()
export class ScheduledCommitSignal {
  private readonly logger = new Logger('ReliableMessaging');
  /** The open transactions that scheduled messages, with the earliest due time (ms since the epoch) of each. */
  private readonly earliest = new WeakMap<QueryRunner, number>();
  private readonly subscriber: EntitySubscriberInterface = {
    afterTransactionCommit: (event) => this.ended(event.queryRunner, true),
    afterTransactionRollback: (event) => this.ended(event.queryRunner, false),
  };
  private readonly notify = new CoalescedNotify(
    SCHEDULED_CHANNEL,
    this.logger,
    (reason) =>
      `could not notify the promoters of scheduled messages (${reason}); they will find the rows by polling`,
  );

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly promoter: ScheduledPromoter,
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

  /** Records that `manager`'s transaction scheduled a message due at `dueAt`; its commit announces it. */
  wrote(manager: EntityManager, dueAt: number): void {
    const runner = manager.queryRunner;
    if (!runner) return this.announce(dueAt);
    this.earliest.set(runner, Math.min(this.earliest.get(runner) ?? Infinity, dueAt));
  }

  private ended(runner: QueryRunner, committed: boolean): void {
    if (runner.isTransactionActive) return;
    const dueAt = this.earliest.get(runner);
    if (dueAt === undefined) return;
    this.earliest.delete(runner);
    if (committed) this.announce(dueAt);
  }

  private announce(dueAt: number): void {
    if (this.promoter.enabled) return this.promoter.expect(dueAt);
    const dataSource = this.options.dataSource;
    if (!dataSource || dueAt - Date.now() >= this.options.outbox.pollIntervalMs) return;
    this.notify.ask(dataSource, dueAt);
  }
}
