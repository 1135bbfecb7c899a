/**
 * A handler was still running when its deadline (the consumer's acknowledgement window) passed. It counts as a
 * failed attempt and is retried like any other; the handler's `ctx.signal` is aborted with this error.
 */
export class HandlerDeadlineExceededError extends Error {
  override readonly name = 'HandlerDeadlineExceededError';
  constructor(
    readonly consumer: string,
    readonly deadlineMs: number,
  ) {
    super(`${consumer} did not finish within its deadline of ${deadlineMs} ms`);
  }
}
