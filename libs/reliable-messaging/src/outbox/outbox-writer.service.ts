import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS, TRANSACTION_GROUP_PREFIX } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboundMessage } from '../envelope/envelope';
import { TransactionContext } from '../database/transaction-context.service';
import { writingTransaction } from '../database/writing-transaction';
import { ClaimCheckWriter } from '../claim-check/claim-check-writer.service';
import { randomUUID } from 'node:crypto';
import { OutboxCommitSignal, type TransactionWrites } from './outbox-commit-signal.service';
import { sendsWithCommit, sendWithCommit } from '../database/pipelined-transaction';
import type { PreparedStatement } from '../database/prepared-query';
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
   * one in the order written (see groupFor). In a handler's transaction the rows are inserted as it commits, in
   * the COMMIT's round trip (see holdsUntilCommit). Claim-checked bodies are stored first; the PostgreSQL store
   * writes them in the same transaction.
   */
  async write(messages: readonly OutboundMessage[], manager?: EntityManager): Promise<void> {
    if (messages.length === 0) return;
    const type = messages[0].properties.type ?? messages[0].routingKey;
    const target = await writingTransaction(type, manager, this.transactions, this.options.dataSource);
    // The claim check's bodies first, in the same transaction: a rollback takes the bodies with the rows.
    await this.claimChecks.write(messages, target);
    const writes = this.commits.writesOf(target) ?? { ungrouped: [], held: [] };
    if (this.holdsUntilCommit(target)) {
      writes.held.push(...messages);
      writes.writeHeld ??= () => this.writeHeld(target, writes);
      sendWithCommit(target, () => this.heldStatement(target, writes));
      this.commits.wrote(target, writes);
      return;
    }
    try {
      await this.insertInOrder(target, writes, messages);
    } catch (error) {
      if (this.options.claimCheck.store?.kind !== 'postgres') await this.claimChecks.discard(messages);
      throw error;
    }
    this.commits.wrote(target, writes);
  }

  /**
   * Whether the messages of `target`'s transaction wait for its COMMIT, to be inserted in the COMMIT's round trip
   * rather than one of their own: in the transaction the module opens for a handler, at its top level. A savepoint
   * opened later writes them first (OutboxCommitSignal), so that they do not roll back with it. Not with a claim
   * check store outside the database, whose bodies are deleted again when their rows could not be written, which
   * a failing COMMIT would not tell.
   */
  private holdsUntilCommit(target: EntityManager): boolean {
    const store = this.options.claimCheck.store;
    return (store === undefined || store.kind === 'postgres') && sendsWithCommit(target);
  }

  /** Inserts the held messages now, in their order after what the transaction wrote so far. */
  private async writeHeld(target: EntityManager, writes: TransactionWrites): Promise<void> {
    const held = writes.held.splice(0);
    if (held.length > 0) await this.insertInOrder(target, writes, held);
  }

  /** The statement that inserts the held messages, for the COMMIT's round trip (see sendWithCommit). */
  private async heldStatement(
    target: EntityManager,
    writes: TransactionWrites,
  ): Promise<PreparedStatement | undefined> {
    const held = writes.held.splice(0);
    if (held.length === 0) return undefined;
    return this.store.insertStatement(held, await this.groupFor(target, writes, held));
  }

  /**
   * Inserts the rows so that the relay sends the transaction's messages without an ordering key in the order they
   * were written, as it sends a key's (see groupFor); records what the transaction wrote in `writes`.
   */
  private async insertInOrder(
    target: EntityManager,
    writes: TransactionWrites,
    messages: readonly OutboundMessage[],
  ): Promise<void> {
    const group = await this.groupFor(target, writes, messages);
    const ungrouped = await this.store.insert(target, messages, group);
    if (group === undefined) writes.ungrouped.push(...ungrouped);
  }

  /**
   * The key `messages` without one of their own take: from the transaction's second such message on, they share a
   * key of their own (the first one gets it then, with one more statement when it was written already). A
   * transaction that writes one such message, the common case, leaves it keyless and costs the relay no key lock.
   */
  private async groupFor(
    target: EntityManager,
    writes: TransactionWrites,
    messages: readonly OutboundMessage[],
  ): Promise<string | undefined> {
    const keyless = messages.filter((message) => message.orderingKey === undefined).length;
    if (writes.group === undefined && keyless > 0 && keyless + writes.ungrouped.length > 1) {
      writes.group = `${TRANSACTION_GROUP_PREFIX}${randomUUID()}`;
      const grouped = writes.ungrouped.splice(0);
      if (grouped.length > 0) await this.store.group(target, grouped, writes.group);
    }
    return writes.group;
  }
}
