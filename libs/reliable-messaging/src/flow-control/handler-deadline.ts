import { HandlerDeadlineExceededError } from '../errors/handler-deadline-exceeded.error';

/**
 * The deadline of one handler run: when it passes, the handler's signal is aborted and `expired` rejects (and
 * `onExpire` is called). A long handler may push it back with `extend()`, up to a hard limit kept below the
 * broker's consumer timeout, so the module always settles a delivery before the broker gives up on it.
 */
export class HandlerDeadline {
  /** Called once when the deadline passes, after the signal is aborted. Default: none. */
  onExpire?: (error: HandlerDeadlineExceededError) => void;
  /** When the deadline passes, epoch milliseconds; read by the sweeper. */
  at: number;
  private active = true;
  private expiredPromise?: Promise<never>;
  private error?: HandlerDeadlineExceededError;
  private fail?: (error: HandlerDeadlineExceededError) => void;
  private readonly startedAt = Date.now();

  constructor(
    private readonly consumer: string,
    durationMs: number,
    /** Epoch milliseconds past which `extend()` cannot push the deadline. */
    private readonly limit: number,
    /** The controller to abort, or a function giving it (so it is only made when needed). */
    private readonly abort: AbortController | (() => AbortController),
  ) {
    this.at = Math.min(this.startedAt + durationMs, limit);
    sweeper.add(this);
  }

  /** Rejects with HandlerDeadlineExceededError when the deadline passes; never resolves. Made on first use. */
  get expired(): Promise<never> {
    this.expiredPromise ??= new Promise<never>((_, reject) => {
      if (this.error) reject(this.error);
      else this.fail = reject;
    });
    return this.expiredPromise;
  }

  /** When the deadline passes. */
  get deadline(): Date {
    return new Date(this.at);
  }

  /** Leaves the handler at least `ms` more from now (never less than it had, never past the limit). */
  extend(ms: number): Date {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`extendDeadline(ms): ms must be a positive number, got ${ms}`);
    if (!this.active) return this.deadline;
    const wanted = Math.min(Date.now() + ms, this.limit);
    if (wanted > this.at) this.at = wanted;
    return this.deadline;
  }

  /** Stops watching the deadline once the handler has finished. */
  clear(): void {
    if (!this.active) return;
    this.active = false;
    sweeper.delete(this);
  }

  /** Fires the deadline: aborts the signal, then rejects `expired` and calls `onExpire`. */
  expire(): void {
    if (!this.active) return;
    this.active = false;
    const error = new HandlerDeadlineExceededError(this.consumer, this.at - this.startedAt);
    this.error = error;
    (typeof this.abort === 'function' ? this.abort() : this.abort).abort(error);
    this.fail?.(error);
    this.onExpire?.(error);
  }
}

/**
 * Watches every running handler's deadline with one timer, armed for the earliest deadline, instead of a timer
 * per delivery. Deadlines of one consumer arrive in the order they pass, so under load the timer is re-armed
 * about once per deadline period; a deadline pushed back by `extend()` is found still pending and re-armed for.
 */
class DeadlineSweeper {
  private readonly pending = new Set<HandlerDeadline>();
  private timer?: NodeJS.Timeout;
  private armedFor = Number.POSITIVE_INFINITY;

  add(deadline: HandlerDeadline): void {
    this.pending.add(deadline);
    if (deadline.at < this.armedFor) this.arm(deadline.at);
    // NOTE: an idle timer is unreferenced so it never holds the process open; a pending deadline holds it.
    else if (this.pending.size === 1) this.timer?.ref();
  }

  delete(deadline: HandlerDeadline): void {
    this.pending.delete(deadline);
    if (this.pending.size === 0) this.timer?.unref();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - Date.now()));
  }

  private sweep(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const deadline of this.pending) {
      if (deadline.at <= now) {
        this.pending.delete(deadline);
        deadline.expire();
      } else if (deadline.at < next) next = deadline.at;
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }
}

const sweeper = new DeadlineSweeper();
