import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { BatchedPruner } from '../database/batched-pruner';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { inboxRetentionWarning } from '../options/inbox.options';
import { InboxStore } from './inbox-store.service';

/**
 * Deletes inbox rows older than `inbox.retentionMs`, every `inbox.pruneIntervalMs`, in batches; runs in
 * processes with at least one deduplicating consumer (MessagingLifecycle starts and stops it). Warns when it
 * starts if the retention does not exceed `inbox.replayWindowMs`, since a message arriving again after its row
 * is gone would be handled twice.
 */
@Injectable()
export class InboxPruner {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly pruner: BatchedPruner;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: InboxStore,
    private readonly registry: ConsumerRegistry,
    @Optional() metrics?: MessagingMetrics,
  ) {
    this.pruner = new BatchedPruner(
      'inbox rows',
      options.inbox.pruneIntervalMs,
      (limit) => this.store.prune(this.options.inbox.retentionMs, limit),
      this.logger,
      { deleted: (count) => metrics?.prunedRows.inc({ kind: 'inbox' }, count) },
    );
  }

  /** True when this process has a DataSource and at least one consumer that deduplicates through the inbox. */
  get enabled(): boolean {
    return (
      this.options.dataSource !== undefined &&
      this.registry.consumers.some((consumer) => consumer.dedup !== undefined)
    );
  }

  /** Starts pruning at every interval, the first one after a random part of it. */
  start(): void {
    const warning = inboxRetentionWarning(this.options.inbox);
    if (warning) this.logger.warn(warning);
    this.pruner.start();
  }

  /** Stops after the statement in progress. */
  async stop(): Promise<void> {
    await this.pruner.stop();
  }

  /** Deletes every inbox row past its retention now; resolves with how many went. */
  pruneNow(): Promise<number> {
    return this.pruner.pruneNow();
  }
}
