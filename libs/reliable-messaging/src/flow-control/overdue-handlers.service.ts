import { Injectable } from '@nestjs/common';

/**
 * Counts handlers still running after their deadline, per queue. Their delivery has already been settled as
 * failed and their concurrency slot freed; a handler that ignores `ctx.signal` keeps running in the background.
 * Reported by the metrics (`rm_handlers_overdue`) and by liveness, which fails when a consumer has more
 * overdue handlers than its concurrency (the process is likely wedged and a restart helps).
 */
@Injectable()
export class OverdueHandlers {
  private readonly counts = new Map<string, number>();

  /** Tracks `work` as overdue on `queue` until it settles. */
  track(queue: string, work: Promise<unknown>): void {
    this.counts.set(queue, this.count(queue) + 1);
    void work
      .catch(() => undefined)
      .finally(() => this.counts.set(queue, Math.max(0, this.count(queue) - 1)));
  }

  /** Overdue handlers on `queue` right now. */
  count(queue: string): number {
    return this.counts.get(queue) ?? 0;
  }
}
