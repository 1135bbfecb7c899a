/** How long and how often {@link waitFor} polls. */
export interface WaitForOptions {
  /** Give up after this long. Default: 10 000 ms. */
  timeoutMs?: number;
  /** Pause between two checks. Default: 50 ms. */
  intervalMs?: number;
  /** Stops the wait early, rejecting with the signal's reason (after one last check). Default: none. */
  signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_INTERVAL_MS = 50;

/**
 * Polls `predicate` until it returns true, or rejects after `timeoutMs` with a message naming what was awaited.
 * A predicate that throws counts as "not yet"; its last error is quoted in the failure message.
 *
 * @param description what is awaited, e.g. `'3 orders applied'`; a function is read at failure time, so it can
 *   report progress (`() => \`3 orders applied (saw ${seen})\``).
 */
export async function waitFor(
  description: string | (() => string),
  predicate: () => boolean | Promise<boolean>,
  options: WaitForOptions = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await predicate()) return;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    options.signal?.throwIfAborted();
    if (Date.now() >= deadline) {
      const what = typeof description === 'function' ? description() : description;
      const cause = lastError === undefined ? '' : `; last error: ${describeError(lastError)}`;
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
