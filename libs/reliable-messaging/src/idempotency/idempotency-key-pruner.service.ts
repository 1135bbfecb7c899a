import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  Optional,
} from '@nestjs/common';
import { BatchedPruner } from '../database/batched-pruner';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { RESOLVED_IDEMPOTENCY_OPTIONS } from './idempotency-module-definition';
import type { ResolvedIdempotencyOptions } from './idempotency.options';
import { IdempotencyStore } from './idempotency-store.service';

/**
 * Deletes expired idempotency keys every `pruneIntervalMs`, in batches, through the module's BatchedPruner.
 * IdempotencyModule is an HTTP-side module apart from the messaging lifecycle, so it starts and stops its one
 * loop with its own Nest hooks: after every module has initialised, and before the DataSource closes.
 */
@Injectable()
export class IdempotencyKeyPruner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private readonly pruner: BatchedPruner;

  constructor(
    @Inject(RESOLVED_IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly store: IdempotencyStore,
    @Optional() metrics?: MessagingMetrics,
  ) {
    this.pruner = new BatchedPruner(
      'expired idempotency keys',
      options.pruneIntervalMs,
      (limit) => this.store.prune(limit),
      this.logger,
      { deleted: (count) => metrics?.prunedRows.inc({ kind: 'idempotency_keys' }, count) },
    );
  }

  onApplicationBootstrap(): void {
    if (this.options.prune) this.pruner.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.pruner.stop();
  }

  /** Deletes every expired key now; resolves with how many went. */
  pruneNow(): Promise<number> {
    return this.pruner.pruneNow();
  }
}
