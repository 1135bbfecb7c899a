/**
 * `request()` got no reply within its `timeoutMs`: nobody answered in time (no responder running, a responder
 * still working, retrying or killed mid-request). The request expired in the broker at the same moment, so it
 * is not handled later unless a responder already had it; a late reply is dropped.
 */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  constructor(
    /** The request's message type. */
    readonly messageType: string,
    /** The request's message id, which its reply would carry as its correlation id. */
    readonly messageId: string,
    /** Where the request was sent. */
    readonly exchange: string,
    readonly routingKey: string,
    /** The timeout that ran out. */
    readonly timeoutMs: number,
  ) {
    super(
      `no reply to request '${messageType}' (message ${messageId}, sent to exchange '${exchange}' with routing ` +
        `key '${routingKey}') within ${timeoutMs} ms: no responder answered in time`,
    );
  }
}
