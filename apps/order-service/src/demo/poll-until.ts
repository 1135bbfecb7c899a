const POLL_INTERVAL_MS = 200;

/**
 * Calls `probe` every 200 ms until it resolves with something other than undefined, and resolves with that; or
 * with undefined once `timeoutMs` has passed or `signal` is aborted. A probe that throws is tried again.
 */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !signal.aborted) {
    const found = await probe().catch(() => undefined);
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  return undefined;
}
