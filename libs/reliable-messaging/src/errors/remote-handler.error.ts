/**
 * The responder's handler failed on a request for good (a non-retryable error, attempts exhausted, an invalid
 * request) and replied with its error, so the caller learns it at once rather than at its timeout. It carries
 * the remote error's name and message, never its stack; the request itself is in the responder's dead-letter
 * queue.
 */
export class RemoteHandlerError extends Error {
  override readonly name = 'RemoteHandlerError';
  constructor(
    /** The request's message type. */
    readonly messageType: string,
    /** The remote error's class name, e.g. `NonRetryableError`. */
    readonly remoteName: string,
    /** The remote error's message. */
    readonly remoteMessage: string,
  ) {
    super(`the responder to request '${messageType}' failed: ${remoteName}: ${remoteMessage}`);
  }
}
