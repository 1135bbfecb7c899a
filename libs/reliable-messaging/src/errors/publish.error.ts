/** Base class of failures to hand a message to the broker. The message may be retried by the caller. */
export class PublishError extends Error {
  override readonly name: string = 'PublishError';
}

/** The broker accepted a `mandatory` message but no queue is bound for its routing key. */
export class UnroutableMessageError extends PublishError {
  override readonly name = 'UnroutableMessageError';
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
    readonly replyText: string,
  ) {
    super(`message to exchange '${exchange}' with routing key '${routingKey}' is unroutable: ${replyText}`);
  }
}

/** The broker did not confirm a publish within the timeout. The message may or may not have been stored. */
export class PublishTimeoutError extends PublishError {
  override readonly name = 'PublishTimeoutError';
}

/** The broker refused the message (basic.nack), for example because a queue is full with reject-publish. */
export class PublishRejectedError extends PublishError {
  override readonly name = 'PublishRejectedError';
}

/** The message is larger than the module's payload limit; it is never sent. */
export class PayloadTooLargeError extends PublishError {
  override readonly name = 'PayloadTooLargeError';
}
