import { NonRetryableError } from '../errors/non-retryable.error';
import type { ResolvedRetryOptions } from '../options/retry.options';

/** Decides whether a failure can succeed on another attempt. */
export type ErrorClassifier = (error: unknown) => 'retry' | 'dead-letter';

/** Non-retryable errors (malformed input, NonRetryableError and its subclasses) dead-letter; the rest retry. */
export const defaultErrorClassifier: ErrorClassifier = (error) =>
  error instanceof NonRetryableError ? 'dead-letter' : 'retry';

/**
 * The classifier of a consumer: NonRetryableError (and so every InvalidMessageError), the configured error
 * classes, and any error a configured `isRetryable` predicate refuses dead-letter at once; everything else is
 * retried. A predicate that throws counts as "retry": the attempt bound still applies.
 */
export function createErrorClassifier(
  options: Pick<ResolvedRetryOptions, 'nonRetryableErrors' | 'isRetryable'>,
): ErrorClassifier {
  return (error) => {
    if (defaultErrorClassifier(error) === 'dead-letter') return 'dead-letter';
    if (options.nonRetryableErrors.some((errorClass) => error instanceof errorClass)) return 'dead-letter';
    for (const isRetryable of options.isRetryable) {
      try {
        if (isRetryable(error) === false) return 'dead-letter';
      } catch {
        return 'retry';
      }
    }
    return 'retry';
  };
}
