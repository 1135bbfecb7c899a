import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS, TRANSACTION_GROUP_PREFIX } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboundMessage } from '../envelope/envelope';
import { TransactionContext } from '../database/transaction-context.service';
import { writingTransaction } from '../database/writing-transaction';
import { ClaimCheckWriter } from '../claim-check/claim-check-writer.service';
import { assertBodiesOutlive, dueTime, type ScheduledDelivery } from './scheduled-delivery';
import { ScheduledCommitSignal } from './scheduled-commit-signal.service';
import { ScheduledStore } from './scheduled-store.service';

/**
 * Writes messages published with `deliverAt` or `delayMs` into the scheduled messages table, in the caller's
 * transaction under the outbox's rules (writingTransaction): they enter the outbox when due, and never when the
 * transaction rolls back. The commit tells the promoters when the earliest is due (ScheduledCommitSignal).
 */
@Injectable()
export class ScheduledWriter {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: ScheduledStore,
    private readonly transactions: TransactionContext,
    private readonly commits: ScheduledCommitSignal,
    private readonly claimChecks: ClaimCheckWriter,
  ) {}

  /** Whether scheduled messages can be written: with the module's `dataSource`. */
  get enabled(): boolean {
    return this.options.dataSource !== undefined;
  }

  /**
   * Writes `messages`, due at `delivery`, in `manager`'s transaction or the current one, with one statement, in
   * their order (the relay sends those without an ordering key in it too: see groupOf). A claim-checked message
   * whose stored body would expire before it is due is refused, as the consumer would find no body; the bodies of
   * the others are stored first, in the same transaction with the PostgreSQL store.
   */
  async write(
    messages: readonly OutboundMessage[],
    delivery: ScheduledDelivery,
    manager?: EntityManager,
  ): Promise<void> {
    if (messages.length === 0) return;
    const type = messages[0].properties.type ?? messages[0].routingKey;
    const dueAt = dueTime(delivery);
    assertBodiesOutlive(messages, dueAt);
    const target = await writingTransaction(type, manager, this.transactions, this.options.dataSource);
    await this.claimChecks.write(messages, target);
    try {
      await this.store.insert(target, messages, delivery, groupOf(messages));
    } catch (error) {
      if (this.options.claimCheck.store?.kind !== 'postgres') await this.claimChecks.discard(messages);
      throw error;
    }
    this.commits.wrote(target, dueAt);
  }
}

/**
 * The ordering key the messages of one call without a key of their own share, so that they leave the outbox in
 * their order once due; none for a single such message, which then costs the relay no key lock. Messages of two
 * calls are not grouped: each call is due at its own time.
 */
function groupOf(messages: readonly OutboundMessage[]): string | undefined {
  const keyless = messages.filter((message) => message.orderingKey === undefined).length;
  return keyless > 1 ? `${TRANSACTION_GROUP_PREFIX}${randomUUID()}` : undefined;
}
