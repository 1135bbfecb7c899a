import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { BatchedPruner } from '../database/batched-pruner';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { inboxRetentionWarning } from './inbox.options';
import { InboxStore } from './inbox-store.service';

/**
 * Deletes inbox rows older than `inbox.retentionMs`, every `inbox.pruneIntervalMs`, in batches; runs in
 * processes with at least one deduplicating consumer. Warns at startup when the retention does not exceed
 * `inbox.replayWindowMs`, since a message arriving again after its row is gone would be handled twice.
 */
@Injectable()
export class InboxPruner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly pruner: BatchedPruner;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: InboxStore,
    private readonly registry: ConsumerRegistry,
  ) {
    this.pruner = new BatchedPruner(
      'inbox rows',
      options.inbox.pruneIntervalMs,
      (limit) => this.store.prune(this.options.inbox.retentionMs, limit),
      this.logger,
    );
  }

  onApplicationBootstrap(): void {
    if (!this.options.dataSource) return;
    if (!this.registry.consumers.some((consumer) => consumer.dedup)) return;
    const warning = inboxRetentionWarning(this.options.inbox);
    if (warning) this.logger.warn(warning);
    this.pruner.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.pruner.stop();
  }

  /** Deletes every inbox row past its retention now; resolves with how many went. */
  pruneNow(): Promise<number> {
    return this.pruner.pruneNow();
  }
}
