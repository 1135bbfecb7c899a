import { HandlerDeadlineExceededError } from '../errors/handler-deadline-exceeded.error';

/**
 * The deadline of one handler run: when it passes, the handler's signal is aborted and `expired` rejects (and
 * `onExpire` is called). A long handler may push it back with `extend()`, up to a hard limit kept below the
 * broker's consumer timeout, so the module always settles a delivery before the broker gives up on it.
 */
export class HandlerDeadline {
  /** When the deadline passes, epoch milliseconds; read by the sweeper. */
  at: number;
  private active = true;
  private expiredPromise?: Promise<never>;
  private error?: HandlerDeadlineExceededError;
  private fail?: (error: HandlerDeadlineExceededError) => void;
  private readonly startedAt = Date.now();
  /** Neighbours in the sweeper's list of pending deadlines. */
  previous?: HandlerDeadline;
  next?: HandlerDeadline;

  constructor(
    private readonly consumer: string,
    durationMs: number,
    /** Epoch milliseconds past which `extend()` cannot push the deadline. */
    private readonly limit: number,
    /** What to abort (an AbortController, an attempt's AttemptAbort), or a function giving it. */
    private readonly abort: Abortable | (() => Abortable),
    /**
     * Called once when the deadline passes, after the signal is aborted. Default: nothing.
     *
     * NOTE: given here rather than set afterwards; see DeadlineSweeper for what that costs.
     */
    private readonly onExpire: (error: HandlerDeadlineExceededError) => void = ignore,
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
    this.onExpire(error);
  }
}

function ignore(): void {}

/** What a deadline aborts when it passes. */
interface Abortable {
  abort(reason: unknown): void;
}

/**
 * Watches every running handler's deadline with one timer, armed for the earliest deadline, instead of a timer
 * per delivery. Deadlines of one consumer arrive in the order they pass, so under load the timer is re-armed
 * about once per deadline period; a deadline pushed back by `extend()` is found still pending and re-armed for.
 *
 * NOTE: the pending deadlines are a list linked through the deadlines themselves, and each deadline gets its
 * `onExpire` when it is made. With a Set of deadlines, or with `onExpire` set after construction, the deliveries
 * the deadlines reach were promoted to V8's old generation, and the pipeline spent 25 to 33 µs of CPU per message
 * instead of 7, most of it in the garbage collector (bench/profile-pipeline.ts, same run).
 */
class DeadlineSweeper {
  private first?: HandlerDeadline;
  private last?: HandlerDeadline;
  private size = 0;
  private timer?: NodeJS.Timeout;
  private armedFor = Number.POSITIVE_INFINITY;

  add(deadline: HandlerDeadline): void {
    deadline.previous = this.last;
    deadline.next = undefined;
    if (this.last) this.last.next = deadline;
    else this.first = deadline;
    this.last = deadline;
    this.size++;
    if (deadline.at < this.armedFor) this.arm(deadline.at);
    // NOTE: an idle timer is unreferenced so it never holds the process open; a pending deadline holds it.
    else if (this.size === 1) this.timer?.ref();
  }

  delete(deadline: HandlerDeadline): void {
    const { previous, next } = deadline;
    if (previous) previous.next = next;
    else if (this.first === deadline) this.first = next;
    else return;
    if (next) next.previous = previous;
    else this.last = previous;
    deadline.previous = deadline.next = undefined;
    if (--this.size === 0) this.timer?.unref();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - Date.now()));
  }

  /**
   * Expires what is due, then re-arms for the earliest still pending. The due ones are taken off the list
   * before any expires: an expiry runs abort listeners (a handler's, the inbox's) that may clear or add other
   * deadlines, which must not cut the walk short or be missed by the next arming.
   */
  private sweep(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    const due: HandlerDeadline[] = [];
    for (let deadline = this.first; deadline; deadline = deadline.next)
      if (deadline.at <= now) due.push(deadline);
    for (const deadline of due) this.delete(deadline);
    for (const deadline of due) deadline.expire();
    let next = Number.POSITIVE_INFINITY;
    for (let deadline = this.first; deadline; deadline = deadline.next)
      if (deadline.at < next) next = deadline.at;
    if (next < this.armedFor) this.arm(next);
  }
}

const sweeper = new DeadlineSweeper();
