import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS, TRANSACTION_GROUP_PREFIX } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboundMessage } from '../envelope/envelope';
import { ConfigurationError } from '../errors/configuration.error';
import { NoTransactionError } from '../errors/no-transaction.error';
import { TransactionContext } from '../database/transaction-context.service';
import { ClaimCheckWriter } from '../claim-check/claim-check-writer.service';
import { randomUUID } from 'node:crypto';
import { OutboxCommitSignal, type TransactionWrites } from './outbox-commit-signal.service';
import { OutboxStore } from './outbox-store.service';

/**
 * Writes outgoing messages into the outbox, inside the caller's transaction: the EntityManager passed in,
 * else nestjs-cls' active transaction, else the transaction of the message being handled. With none of them it
 * refuses (NoTransactionError) rather than send a message whose state change may still roll back. The
 * transaction's commit then wakes the relay (OutboxCommitSignal).
 */
@Injectable()
export class OutboxWriter {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: OutboxStore,
    private readonly transactions: TransactionContext,
    private readonly commits: OutboxCommitSignal,
    private readonly claimChecks: ClaimCheckWriter,
  ) {}

  /** True when a DataSource is configured, so `publish()` goes through the outbox. */
  get enabled(): boolean {
    return this.options.dataSource !== undefined;
  }

  /**
   * Writes `messages` in `manager`'s transaction, or in the current one, with one statement, in their order: the
   * relay sends them in that order where they share an ordering key, and sends a transaction's messages without
   * one in the order written (see insertInOrder). Claim-checked bodies are stored first; the PostgreSQL store writes
   * them in the same transaction.
   */
  async write(messages: readonly OutboundMessage[], manager?: EntityManager): Promise<void> {
    if (messages.length === 0) return;
    const type = messages[0].properties.type ?? messages[0].routingKey;
    const target = manager ?? (await this.transactions.currentManager());
    if (!target) throw new NoTransactionError(type);
    if (manager) {
      const runner = manager.queryRunner;
      if (!runner || runner.isReleased || !runner.isTransactionActive) {
        throw new NoTransactionError(
          type,
          'the EntityManager passed as { manager } is not inside a transaction',
        );
      }
    }
    if (target.connection !== this.options.dataSource) {
      throw new ConfigurationError(
        `publish() of '${type}': the transaction belongs to another DataSource than the module's dataSource option, ` +
          'so the message could not commit with it; publish inside a transaction of that DataSource',
      );
    }
    // The claim check's bodies first, in the same transaction: a rollback takes the bodies with the rows.
    await this.claimChecks.write(messages, target);
    let writes: TransactionWrites;
    try {
      writes = await this.insertInOrder(target, messages);
    } catch (error) {
      if (this.options.claimCheck.store?.kind !== 'postgres') await this.claimChecks.discard(messages);
      throw error;
    }
    this.commits.wrote(target, writes);
  }

  /**
   * Inserts the rows so that the relay sends the transaction's messages without an ordering key in the order they
   * were written, as it sends a key's: from the second such message on, they share a key of their own (the first
   * one gets it then, with one more statement when it came in an earlier call). A transaction that writes one such
   * message, the common case, leaves it keyless and costs the relay no key lock.
   */
  private async insertInOrder(
    target: EntityManager,
    messages: readonly OutboundMessage[],
  ): Promise<TransactionWrites> {
    const before = this.commits.writesOf(target) ?? { ungrouped: [] };
    const keyless = messages.filter((message) => message.orderingKey === undefined).length;
    let group = before.group;
    if (group === undefined && keyless > 0 && keyless + before.ungrouped.length > 1) {
      group = `${TRANSACTION_GROUP_PREFIX}${randomUUID()}`;
      if (before.ungrouped.length > 0) await this.store.group(target, before.ungrouped, group);
    }
    const ungrouped = await this.store.insert(target, messages, group);
    return group === undefined
      ? { ungrouped: [...before.ungrouped, ...ungrouped] }
      : { group, ungrouped: [] };
  }
}
