/** Runs `task` for every index from 0 to `count - 1`, at most `concurrency` at a time; stops starting new ones on abort. */
export async function runBounded(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && !signal?.aborted) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}
