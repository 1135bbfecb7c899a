import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { BatchedPruner } from '../database/batched-pruner';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { anyMessageTypeUsesClaimCheck } from '../decorators/message-type.decorator';
import type { ClaimCheckStore, ClaimCheckStoreStats } from '../options/claim-check.options';
import { readDeadLetterReferences } from './dead-letter-references';

/**
 * Deletes claim-checked bodies past their time to live (`claimCheck.timeToLiveMs`), every
 * `claimCheck.pruneIntervalMs`, in batches, in every process that uses the claim check (module options or a
 * message class) and has a store; MessagingLifecycle starts and stops it. Replicas pruning at once delete
 * different rows or the same rows twice, both harmless. Also reads the store's size for the metrics.
 *
 * Mark and sweep: a dead-letter queue keeps its messages for ever, so an expired body may still be needed. Each
 * round first reads the references held by the dead letters in this app's dead-letter queues (without moving
 * them: readDeadLetterReferences), then deletes only expired bodies none of them refers to. When that read
 * cannot complete (no broker, a read error, more dead letters than its budget) the round deletes nothing. It
 * knows only this app's dead-letter queues: see docs/claim-check.md for a store shared by several apps.
 */
@Injectable()
export class ClaimCheckPruner {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly pruner?: BatchedPruner;
  /** The expired bodies this round keeps: those a dead letter refers to. */
  private referenced: ReadonlySet<string> = new Set();

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly connection: ConsumerConnection,
    private readonly registry: ConsumerRegistry,
    @Optional() metrics?: MessagingMetrics,
  ) {
    const { store, pruneIntervalMs, configured } = options.claimCheck;
    // Only in an app that uses the claim check: the default PostgreSQL store of an app with a dataSource serves
    // only to read claim-checked messages otherwise, and its table may not even be migrated.
    if (store && (configured || anyMessageTypeUsesClaimCheck())) {
      this.pruner = new BatchedPruner(
        `expired claim-check bodies (${store.kind})`,
        pruneIntervalMs,
        (limit) => store.deleteExpired(limit, new Date(), this.referenced),
        this.logger,
        {
          beginRound: () => this.mark(store),
          deleted: (count) => metrics?.prunedRows.inc({ kind: 'claim_check' }, count),
        },
      );
    }
  }

  /** Reads what this app's dead letters refer to; throws (the round deletes nothing) when it cannot. */
  private async mark(store: ClaimCheckStore): Promise<void> {
    this.referenced = new Set();
    const model = this.connection.model;
    if (!model) throw new Error('not connected to the broker, so the dead letters cannot be read');
    const queues = [
      ...new Set(this.registry.discoveredConsumers.map((consumer) => consumer.deadLetterQueue)),
    ];
    this.referenced = await readDeadLetterReferences(model, queues, store);
  }

  /** True when the app uses the claim check and has a store: pruning and the store's metrics run. */
  get enabled(): boolean {
    return this.pruner !== undefined;
  }

  /** Starts pruning at every interval, the first one after a random part of it. */
  start(): void {
    this.pruner?.start();
  }

  /** Stops after the batch in progress. */
  async stop(): Promise<void> {
    await this.pruner?.stop();
  }

  /** Deletes every expired body now; resolves with how many went. */
  async pruneNow(): Promise<number> {
    return (await this.pruner?.pruneNow()) ?? 0;
  }

  /** The store's bodies, bytes and oldest body; undefined without a store. */
  async stats(): Promise<ClaimCheckStoreStats | undefined> {
    return this.options.claimCheck.store?.stats();
  }
}
