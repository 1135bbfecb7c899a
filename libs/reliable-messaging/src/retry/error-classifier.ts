import { NonRetryableError } from '../errors/non-retryable.error';

/** Decides whether a failure can succeed on another attempt. */
export type ErrorClassifier = (error: unknown) => 'retry' | 'dead-letter';

/** Non-retryable errors (malformed input, NonRetryableError and its subclasses) dead-letter; the rest retry. */
export const defaultErrorClassifier: ErrorClassifier = (error) =>
  error instanceof NonRetryableError ? 'dead-letter' : 'retry';
