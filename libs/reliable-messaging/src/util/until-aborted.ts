/** Something that can be abandoned, and says so: an attempt's AttemptAbort. */
export interface Abandonable {
  readonly aborted: boolean;
  /** Why it was abandoned; the error `untilAborted` rejects with. */
  readonly reason: unknown;
  /** Calls `listener` once when it is abandoned; returns a function that removes it. */
  onAbort(listener: () => void): () => void;
}

/**
 * Settles with `work`, or rejects with the abandon reason as soon as `abandonable` is abandoned, calling `onAbort`
 * first. `work` goes on; its outcome is then ignored (it is observed, so it never becomes an unhandled rejection).
 */
export function untilAborted<T>(work: Promise<T>, abandonable: Abandonable, onAbort: () => void): Promise<T> {
  if (abandonable.aborted) {
    work.catch(() => undefined);
    onAbort();
    return Promise.reject(abandonable.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const remove = abandonable.onAbort(() => {
      onAbort();
      reject(abandonable.reason);
    });
    work.then(
      (value) => {
        remove();
        resolve(value);
      },
      (error: unknown) => {
        remove();
        reject(error);
      },
    );
  });
}
