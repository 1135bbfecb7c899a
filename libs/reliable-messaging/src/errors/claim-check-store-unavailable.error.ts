/**
 * The claim-check store could not be reached (connection refused, timed out, a server error). On publish nothing
 * was sent and the call may be repeated; on consume the delivery waits for the store without spending an attempt.
 */
export class ClaimCheckStoreUnavailableError extends Error {
  override readonly name = 'ClaimCheckStoreUnavailableError';
  constructor(
    readonly store: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`the ${store} claim-check store is unavailable: ${message}`, options);
  }
}
