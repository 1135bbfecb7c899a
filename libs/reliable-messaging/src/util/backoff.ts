/**
 * Exponential backoff with full jitter: a delay drawn uniformly from [0, min(cap, base * 2^(attempt-1))].
 * Full jitter spreads reconnecting or retrying clients best (see AWS' "Exponential Backoff And Jitter").
 */
export function fullJitterDelay(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  return Math.floor(random() * backoffCeiling(attempt, baseMs, capMs));
}

/**
 * Exponential backoff with equal jitter: a delay drawn uniformly from [ceiling/2, ceiling], ceiling as for
 * full jitter. Spreads retries nearly as well, and keeps a floor, so a run of retries has a known least total.
 */
export function equalJitterDelay(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = backoffCeiling(attempt, baseMs, capMs);
  return Math.floor(ceiling / 2 + random() * (ceiling / 2));
}

/** The exponential ceiling of attempt `attempt` (1 for the first): min(cap, base × 2^(attempt-1)). */
export function backoffCeiling(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
