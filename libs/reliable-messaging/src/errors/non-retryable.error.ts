/**
 * Throw this (or a subclass) from a handler when retrying cannot help: the message goes straight to its
 * dead-letter queue with the error recorded in its headers.
 */
export class NonRetryableError extends Error {
  override readonly name: string = 'NonRetryableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
