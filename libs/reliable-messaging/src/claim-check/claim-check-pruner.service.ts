import { Inject, Injectable, Logger } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { BatchedPruner } from '../database/batched-pruner';
import { anyMessageTypeUsesClaimCheck } from '../decorators/message-type.decorator';
import type { ClaimCheckStoreStats } from '../options/claim-check.options';

/**
 * Deletes claim-checked bodies past their time to live (`claimCheck.timeToLiveMs`), every
 * `claimCheck.pruneIntervalMs`, in batches, in every process that uses the claim check (module options or a
 * message class) and has a store; MessagingLifecycle starts and stops it. Replicas pruning at once delete
 * different rows or the same rows twice, both harmless. Also reads the store's size for the metrics.
 */
@Injectable()
export class ClaimCheckPruner {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly pruner?: BatchedPruner;

  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {
    const { store, pruneIntervalMs, configured } = options.claimCheck;
    // Only in an app that uses the claim check: the default PostgreSQL store of an app with a dataSource serves
    // only to read claim-checked messages otherwise, and its table may not even be migrated.
    if (store && (configured || anyMessageTypeUsesClaimCheck())) {
      this.pruner = new BatchedPruner(
        `expired claim-check bodies (${store.kind})`,
        pruneIntervalMs,
        (limit) => store.deleteExpired(limit),
        this.logger,
      );
    }
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
