/** Spent entries at the front of the waiting queue past which it is compacted. */
const COMPACT_AFTER = 1024;

/**
 * Bounds how many deliveries of one consumer run at once; a finished one's slot goes to the longest waiting.
 *
 * While a slot is free a task starts at once, in the caller's turn, and costs one promise: its work's own, with
 * the release chained to it. A general-purpose limiter (p-limit) spends six promises and two microtask turns on
 * every task, even when nothing waits, which the consumer's hot path cannot afford (docs/benchmarks.md).
 */
export class ConcurrencySlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  /** Index of the longest waiting task in `waiting`: taken from the front without shifting the array. */
  private head = 0;
  private readonly released = (): void => this.release();
  private readonly releasedWithError = (error: unknown): never => {
    this.release();
    throw error;
  };

  constructor(private readonly limit: number) {}

  /** Tasks waiting for a slot, and the queue's length in memory (spent entries included). */
  get waitingCount(): { waiting: number; held: number } {
    return { waiting: this.waiting.length - this.head, held: this.waiting.length };
  }

  /** Tasks running now. */
  get active(): number {
    return this.running;
  }

  /** Runs `task` in a free slot, or once one frees up; settles as the task's promise does. */
  run(task: () => Promise<void>): Promise<void> {
    if (this.running < this.limit) return this.start(task);
    return new Promise<void>((resolve) => this.waiting.push(() => resolve(this.start(task))));
  }

  private start(task: () => Promise<void>): Promise<void> {
    this.running++;
    let work: Promise<void>;
    try {
      work = task();
    } catch (error) {
      work = Promise.reject(error);
    }
    return work.then(this.released, this.releasedWithError);
  }

  private release(): void {
    this.running--;
    if (this.head === this.waiting.length) return;
    const next = this.waiting[this.head];
    this.waiting[this.head++] = undefined as unknown as () => void;
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head >= COMPACT_AFTER && this.head * 2 >= this.waiting.length) {
      // A queue that never runs empty (prefetch above concurrency, under a steady backlog) would otherwise grow
      // by one spent entry per task.
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
    next();
  }
}
