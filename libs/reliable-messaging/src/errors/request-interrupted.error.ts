/**
 * A request was in flight when the channel its reply would come back on closed (the publisher connection
 * dropped, or the app shut down). RabbitMQ's direct reply-to delivers a reply only to the channel that sent
 * the request, so the reply is lost: every pending request fails at once with this error instead of waiting
 * for its timeout. The request itself may still have been handled; send it again only if that is safe.
 */
export class RequestInterruptedError extends Error {
  override readonly name = 'RequestInterruptedError';
  constructor(
    /** The request's message type. */
    readonly messageType: string,
    /** The request's message id. */
    readonly messageId: string,
    /** Why the reply channel closed. */
    readonly reason: string,
  ) {
    super(
      `request '${messageType}' (message ${messageId}) was interrupted before its reply came: ${reason}; ` +
        'its reply can no longer be received (the responder may still have handled it)',
    );
  }
}
