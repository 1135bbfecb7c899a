import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { BatchedPruner } from '../database/batched-pruner';
import { OutboxStore } from './outbox-store.service';

/**
 * Deletes published outbox rows once they are older than `outbox.retentionMs`, every `outbox.pruneIntervalMs`,
 * in batches. Runs where the relay runs (MessagingLifecycle starts and stops it); pending and parked rows are
 * never touched.
 */
@Injectable()
export class OutboxPruner {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly pruner: BatchedPruner;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: OutboxStore,
    @Optional() metrics?: MessagingMetrics,
  ) {
    this.pruner = new BatchedPruner(
      'published outbox rows',
      options.outbox.pruneIntervalMs,
      (limit) => this.store.prunePublished(this.options.outbox.retentionMs, limit),
      this.logger,
      { deleted: (count) => metrics?.prunedRows.inc({ kind: 'outbox' }, count) },
    );
  }

  /** Starts pruning at every interval, the first one after a random part of it. */
  start(): void {
    this.pruner.start();
  }

  /** Stops after the statement in progress. */
  async stop(): Promise<void> {
    await this.pruner.stop();
  }

  /** Deletes every published row past its retention now; resolves with how many went. */
  pruneNow(): Promise<number> {
    return this.pruner.pruneNow();
  }
}
