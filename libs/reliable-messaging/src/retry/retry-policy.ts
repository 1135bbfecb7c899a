import { SagaRefusedError } from '../errors/saga-refused.error';
import { MessageRefusedError } from '../errors/message-refused.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { ManualSettlementError } from '../errors/manual-settlement.error';
import { RedeliveryLimitError } from '../errors/redelivery-limit.error';
import { backoffCeiling, equalJitterDelay } from '../util/backoff';
import { quantiseDelay } from './delay-levels';
import { createErrorClassifier, type ErrorClassifier } from './error-classifier';
import type { ResolvedRetryOptions } from '../options/retry.options';

/** What happens to a failed delivery: another attempt after a delay, or the dead-letter queue with a reason. */
export type RetryDecision =
  { action: 'retry'; delayMs: number; nextAttempt: number } | { action: 'dead-letter'; reason: string };

/**
 * One consumer's retry rules. A non-retryable failure dead-letters at once (its reason: the InvalidMessageError's
 * own, `redelivery-limit`, or `non-retryable`); a retryable one is tried again until `maxAttempts`, then
 * dead-letters as `attempts-exhausted`. The delay before attempt n+1 is equal jitter: uniform in [c/2, c] with
 * c = min(maxDelayMs, initialDelayMs × 2^(n-1)), rounded to the delay levels' 100 ms resolution. The floor
 * gives the whole run of retries a known least length: with the defaults, over 5 minutes, so a routine outage
 * of something the handler calls is outlasted before anything is dead-lettered.
 */
export class RetryPolicy {
  readonly classify: ErrorClassifier;

  constructor(
    readonly options: ResolvedRetryOptions,
    private readonly random: () => number = () => Math.random(),
  ) {
    this.classify = createErrorClassifier(options);
  }

  /** The decision for a failure of attempt `attempt` (1 for the first). */
  decide(error: unknown, attempt: number): RetryDecision {
    if (this.classify(error) === 'dead-letter')
      return { action: 'dead-letter', reason: deadLetterReason(error) };
    if (attempt >= this.options.maxAttempts) return { action: 'dead-letter', reason: 'attempts-exhausted' };
    return { action: 'retry', delayMs: this.delayBefore(attempt + 1), nextAttempt: attempt + 1 };
  }

  /** A drawn delay before attempt `nextAttempt` (2 for the first retry). */
  delayBefore(nextAttempt: number): number {
    const { initialDelayMs, maxDelayMs } = this.options;
    return quantiseDelay(equalJitterDelay(nextAttempt - 1, initialDelayMs, maxDelayMs, this.random));
  }

  /** The largest delay the policy can draw before attempt `nextAttempt`, before rounding. */
  ceilingBefore(nextAttempt: number): number {
    return backoffCeiling(nextAttempt - 1, this.options.initialDelayMs, this.options.maxDelayMs);
  }
}

/** The dead-letter reason of a failure that is not retried. */
export function deadLetterReason(error: unknown): string {
  if (
    error instanceof InvalidMessageError ||
    error instanceof MessageRefusedError ||
    error instanceof SagaRefusedError
  )
    return error.reason;
  if (error instanceof RedeliveryLimitError) return 'redelivery-limit';
  if (error instanceof ManualSettlementError) return error.reason;
  return 'non-retryable';
}
