import type { Logger } from '@nestjs/common';
import { sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';

/** Rows one prune statement deletes: small enough to keep locks and WAL bursts short. */
export const PRUNE_BATCH_SIZE = 1000;

/** What a pruner's owner does around its batches. */
export interface PrunerHooks {
  /** Runs before each round's first batch; when it throws, the round deletes nothing. */
  beginRound?: () => Promise<void>;
  /** Told each batch's count of deleted rows, as it commits: a metric of the pruner's progress. */
  deleted?: (count: number) => void;
}

/**
 * Deletes old rows every `intervalMs`, one batch per statement until a batch comes back short, so a large
 * backlog never becomes one long transaction. The first run starts after a random part of the interval, so
 * replicas started together don't prune together. Failures are logged and retried at the next interval.
 */
export class BatchedPruner {
  private readonly stopping = new AbortController();
  private loop?: Promise<void>;

  constructor(
    private readonly what: string,
    private readonly intervalMs: number,
    private readonly deleteBatch: (limit: number) => Promise<number>,
    private readonly logger: Logger,
    private readonly hooks: PrunerHooks = {},
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops after the statement in progress. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** Deletes batches until none is full; resolves with the rows deleted. */
  async pruneNow(): Promise<number> {
    await this.hooks.beginRound?.();
    let total = 0;
    for (;;) {
      const deleted = await this.deleteBatch(PRUNE_BATCH_SIZE);
      this.hooks.deleted?.(deleted);
      total += deleted;
      if (deleted < PRUNE_BATCH_SIZE || this.stopping.signal.aborted) return total;
    }
  }

  private async run(): Promise<void> {
    await sleep(Math.floor(Math.random() * this.intervalMs), this.stopping.signal);
    while (!this.stopping.signal.aborted) {
      try {
        const deleted = await this.pruneNow();
        if (deleted > 0) this.logger.debug(`pruned ${deleted} ${this.what}`);
      } catch (error) {
        this.logger.warn(
          `pruning ${this.what} failed (${errorMessage(error)}); trying again in ${this.intervalMs} ms`,
        );
      }
      await sleep(this.intervalMs, this.stopping.signal);
    }
  }
}
