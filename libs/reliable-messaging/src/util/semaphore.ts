/** Bounds how many tasks run at once; the rest wait in arrival order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  get running(): number {
    return this.active;
  }

  /** Runs `task` once a slot is free; settles like the task's promise. */
  run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) {
      this.active++;
      return this.start(task);
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => this.start(task));
  }

  /** Runs `task` in a slot already taken, and frees the slot when it settles. */
  private start<T>(task: () => Promise<T>): Promise<T> {
    let work: Promise<T>;
    try {
      work = task();
    } catch (error) {
      this.release();
      return Promise.reject(error);
    }
    return work.then(
      (value) => {
        this.release();
        return value;
      },
      (error: unknown) => {
        this.release();
        throw error;
      },
    );
  }

  /** Hands a finished task's slot to the longest waiting one, so no newcomer can take it in between. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
}
