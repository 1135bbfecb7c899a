import { Injectable } from '@nestjs/common';

/** A delivery the inbox recognised as already handled, and skipped. */
export interface DuplicateDelivery {
  /** The consumer's queue. */
  queue: string;
  /** The consumer, `Class.method`. */
  consumer: string;
  messageId: string;
  idempotencyKey: string;
  type: string;
}

/**
 * Counts the deliveries the inbox skipped as duplicates, per consumer queue, and tells listeners about each one
 * (for metrics). Listeners run synchronously and must not throw; an error they throw is swallowed.
 */
@Injectable()
export class InboxStats {
  private readonly byQueue = new Map<string, number>();
  private readonly listeners = new Set<(duplicate: DuplicateDelivery) => void>();

  /** Duplicates skipped since start, all consumers together. */
  get duplicates(): number {
    let total = 0;
    for (const count of this.byQueue.values()) total += count;
    return total;
  }

  /** Duplicates skipped since start by the consumer of `queue`. */
  duplicatesOf(queue: string): number {
    return this.byQueue.get(queue) ?? 0;
  }

  /** Calls `listener` for every duplicate from now on; returns a function that stops it. */
  onDuplicate(listener: (duplicate: DuplicateDelivery) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Records a skipped duplicate. */
  record(duplicate: DuplicateDelivery): void {
    this.byQueue.set(duplicate.queue, (this.byQueue.get(duplicate.queue) ?? 0) + 1);
    for (const listener of this.listeners) {
      try {
        listener(duplicate);
      } catch {
        // A metrics listener's failure must not fail the delivery it reports on.
      }
    }
  }
}
