/**
 * Another request with the same idempotency key held the key's row longer than `lockTimeoutMs`: it is still
 * running. The interceptor answers 409 Conflict; the client retries later and gets that request's response.
 */
export class IdempotencyKeyInFlightError extends Error {
  override readonly name = 'IdempotencyKeyInFlightError';
  constructor(
    readonly scope: string,
    readonly key: string,
  ) {
    super(`a request with this Idempotency-Key is still in progress in '${scope}'`);
  }
}
