/** The most client addresses the limiter remembers; past it, the address seen least recently is forgotten. */
const MAX_TRACKED_ADDRESSES = 10_000;

/**
 * A sliding-window count of refused attempts per client address, in this process: an address with `failures`
 * refusals inside the last `windowMs` is held off until the oldest of them leaves the window. Memory is bounded
 * by the window's size per address and by MAX_TRACKED_ADDRESSES addresses.
 */
export class AuthFailureLimiter {
  private readonly refusals = new Map<string, number[]>();

  constructor(
    private readonly failures: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `address` may try again, or undefined when it may now. */
  retryAfterSeconds(address: string): number | undefined {
    const recent = this.recent(address);
    if (recent.length < this.failures) return undefined;
    return Math.max(
      1,
      Math.ceil((recent[recent.length - this.failures] + this.windowMs - this.now()) / 1000),
    );
  }

  /** Counts a refusal of `address`. */
  refused(address: string): void {
    const recent = this.recent(address);
    recent.push(this.now());
    if (recent.length > this.failures) recent.splice(0, recent.length - this.failures);
    // Re-inserting keeps the map in order of last refusal, so the first key is the one to forget.
    this.refusals.delete(address);
    this.refusals.set(address, recent);
    if (this.refusals.size > MAX_TRACKED_ADDRESSES) {
      this.refusals.delete(this.refusals.keys().next().value as string);
    }
  }

  private recent(address: string): number[] {
    const since = this.now() - this.windowMs;
    const recent = (this.refusals.get(address) ?? []).filter((at) => at > since);
    if (recent.length === 0) this.refusals.delete(address);
    return recent;
  }
}
