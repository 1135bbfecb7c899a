/** The error of {@link withTimeout}: its message is the module's own words, naming what did not answer. */
export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Resolves as `work` does, or rejects with an error naming `what` when it takes longer than `ms`.
 *
 * NOTE: `AbortSignal.timeout()` only helps work that takes a signal. What this bounds (amqplib's and pg's calls,
 * TypeORM queries, a step of the shutdown) takes none, so the wait is raced against a timer, which is cleared as
 * soon as either side settles: no timer outlives the call.
 */
export async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
