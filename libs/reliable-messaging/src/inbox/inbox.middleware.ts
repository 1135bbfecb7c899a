import { Inject, Injectable, Logger } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import { ConfigurationError } from '../errors/configuration.error';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import { isTransientDatabaseError } from '../database/database-errors';
import { TransactionContext } from '../database/transaction-context.service';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { InboxStats } from './inbox-stats.service';
import { InboxStore } from './inbox-store.service';

/** How long a delivery whose transaction the database broke waits for the database before going back. */
const DATABASE_WAIT_MS = 30_000;
const DATABASE_PROBE_BASE_MS = 100;
const DATABASE_PROBE_CAP_MS = 5_000;

/**
 * The inbox stage of the reliability pipeline. For a consumer with `dedup` on, the handler runs inside a
 * transaction that first inserts the inbox row (consumer queue, or a key-ordered consumer's base queue, and
 * idempotency key): a duplicate finds the row, skips the handler and is acknowledged; otherwise the handler's
 * writes (through `ctx.manager`, `txHost.tx` or `@Transactional()`) and the messages it publishes (outbox rows)
 * commit with the row, and the acknowledgement follows the commit. A transaction the database broke (connection
 * lost, failover, serialization failure) is not the message's fault: the delivery waits for the database to
 * answer and goes back to the queue unacknowledged, without a failed attempt. Any other error (the handler's, a
 * constraint failing at commit) rolls the transaction back and goes on to the failure handler.
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
      try {
        await this.transactions.runInNewTransaction(async (manager) => {
          if (!(await this.store.record(manager, scope, envelope))) {
            duplicate = true;
            return;
          }
          delivery.manager = manager;
          await next(delivery);
        });
      } catch (error) {
        if (!isTransientDatabaseError(error)) throw error;
        await this.handBack(delivery, error);
        return;
      } finally {
        delivery.manager = undefined;
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
   * Returns a delivery whose transaction the database broke to the queue, once the database answers again (or
   * after a bounded wait), so an outage holds the consumer's slots instead of cycling messages through it.
   */
  private async handBack(delivery: InboundDelivery, error: unknown): Promise<void> {
    const id = delivery.envelope?.messageId ?? '?';
    this.logger.warn(
      `${delivery.consumer.name}: the database failed while handling message ${id} (${errorMessage(error)}); ` +
        'it goes back to the queue unacknowledged once the database answers',
    );
    const dataSource = this.options.dataSource;
    const deadline = Date.now() + DATABASE_WAIT_MS;
    for (let attempt = 1; dataSource && Date.now() < deadline && !delivery.abort.signal.aborted; attempt++) {
      try {
        await dataSource.query('SELECT 1');
        break;
      } catch {
        await sleep(
          fullJitterDelay(attempt, DATABASE_PROBE_BASE_MS, DATABASE_PROBE_CAP_MS),
          delivery.abort.signal,
        );
      }
    }
    delivery.nack(true);
  }
}
