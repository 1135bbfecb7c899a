import { Inject, Injectable, Logger } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import { ConfigurationError } from '../errors/configuration.error';
import type { EntityManager } from 'typeorm';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import { backendPid, endSession, terminateBackend } from '../database/backend-terminator';
import { TransactionContext } from '../database/transaction-context.service';
import { errorMessage } from '../util/error-text';
import { untilAborted } from '../util/until-aborted';
import { InboxStats } from './inbox-stats.service';
import { InboxStore } from './inbox-store.service';

/**
 * The inbox stage of the reliability pipeline. For a consumer with `dedup` on, the handler runs inside a
 * transaction that first inserts the inbox row (consumer queue, or a key-ordered consumer's base queue, and
 * idempotency key): a duplicate finds the row, skips the handler and is acknowledged; otherwise the handler's
 * writes (through `ctx.manager`, `txHost.tx` or `@Transactional()`) and the messages it publishes (outbox rows)
 * commit with the row, and the acknowledgement follows the commit. Any error (the handler's, a constraint
 * failing at commit, the database going away) rolls the transaction back and goes on up the pipeline, where the
 * database pause stage tells an outage from the message's fault.
 *
 * When the attempt is abandoned (its deadline passed, or shutdown passed its own), the transaction's session
 * ends at once, without waiting for the handler: PostgreSQL rolls back a transaction whose session ended, and
 * every statement the handler sends later fails. A plain ROLLBACK would not do: a statement the handler queued
 * behind it would run on the same connection outside any transaction and commit on its own. Its backend is
 * terminated too, and the stage returns once it is gone, so the retry never waits on the abandoned attempt's
 * locks. The database pool is never exhausted by handlers that ignore their signal.
 */
@Injectable()
export class InboxStage {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: InboxStore,
    private readonly stats: InboxStats,
    private readonly transactions: TransactionContext,
  ) {}

  /** Whether `consumer` deduplicates: its `dedup` option, on by default when the module has a dataSource. */
  isEnabledFor(consumer: ConsumerDefinition): boolean {
    return consumer.options.dedup ?? this.options.dataSource !== undefined;
  }

  /** The stage for `consumer`: a pass-through when its dedup is off. Fails startup when dedup lacks a dataSource. */
  for(consumer: ConsumerDefinition): MessageMiddleware {
    const dedup = consumer.options.dedup;
    if (dedup !== undefined && typeof dedup !== 'boolean') {
      throw new ConfigurationError(
        `@Consume on ${consumer.name}: 'dedup' must be true or false, got ${String(dedup)}`,
      );
    }
    if (dedup === true && !this.options.dataSource) {
      throw new ConfigurationError(
        `@Consume on ${consumer.name}: dedup needs the module's dataSource option, where the inbox table lives; ` +
          'configure dataSource, or set dedup: false for a handler that is idempotent by construction',
      );
    }
    if (!this.isEnabledFor(consumer)) return (next) => next;
    // A key-ordered consumer's partitions share one inbox: a key moves to another partition when the partition
    // count changes, and its redelivered or replayed messages must still be recognised there.
    const scope = consumer.ordering?.mode === 'key' ? consumer.ordering.baseQueue : consumer.queue;
    return (next) => async (delivery) => {
      const envelope = delivery.envelope;
      if (!envelope) throw new Error('the inbox stage runs after the envelope is decoded');
      let duplicate = false;
      let abandoning: Promise<void> | undefined;
      try {
        await this.transactions.runInNewTransaction(async (manager) => {
          if (!(await this.store.record(manager, scope, envelope))) {
            duplicate = true;
            return;
          }
          delivery.manager = manager;
          // The deadline may have passed while the row was written: then the handler must not start at all.
          const abandoned = delivery.abort.signal;
          abandoned.throwIfAborted();
          await untilAborted(next(delivery), abandoned, () => {
            abandoning = this.abandon(delivery.consumer.name, manager);
          });
        });
      } finally {
        delivery.manager = undefined;
        // The retry must not meet the abandoned transaction's locks (its inbox row, its writes) on the server.
        await abandoning;
      }
      if (duplicate) {
        this.logger.debug(
          `${consumer.name}: message ${envelope.messageId} is a duplicate of one already handled (idempotency key ${envelope.idempotencyKey}); skipped`,
        );
        this.stats.record({
          queue: consumer.queue,
          consumer: consumer.name,
          messageId: envelope.messageId,
          idempotencyKey: envelope.idempotencyKey,
          type: envelope.type,
        });
      }
    };
  }

  /**
   * Ends the abandoned transaction's session, and its backend on the server, which would otherwise finish the
   * statement it runs (holding its locks) before it noticed; resolves once the backend is gone. Never rejects.
   */
  private async abandon(consumer: string, manager: EntityManager): Promise<void> {
    const pid = backendPid(manager);
    const abandonedAt = new Date();
    endSession(manager);
    if (pid === undefined) return;
    await terminateBackend(manager, pid, abandonedAt).catch((error: unknown) =>
      this.logger.error(
        `${consumer}: could not end the database backend ${pid} of an abandoned handler: ${errorMessage(error)}`,
      ),
    );
  }
}
