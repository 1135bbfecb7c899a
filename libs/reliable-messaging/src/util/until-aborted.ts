/**
 * Settles with `work`, or rejects with the signal's reason as soon as `signal` aborts, calling `onAbort` first.
 * `work` goes on; its outcome is then ignored (it is observed, so it never becomes an unhandled rejection).
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal, onAbort: () => void): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    onAbort();
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const aborted = (): void => {
      onAbort();
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', aborted, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', aborted);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', aborted);
        reject(error);
      },
    );
  });
}
