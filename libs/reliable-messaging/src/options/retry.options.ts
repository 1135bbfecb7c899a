import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';
import { assertInteger } from './option-assertions';

/** An error class, matched with `instanceof`. */
export type ErrorClass = abstract new (...args: never[]) => unknown;

/**
 * How failed deliveries are retried. Set module-wide in `forRoot({ retry })` and per consumer in
 * `@Consume({ retry })`; a consumer's numbers replace the module's, its error classes and predicate add to them.
 */
export interface RetryOptions {
  /**
   * Attempts in all, the first one included; 1 turns retries off. Default: 12, which with the default delays
   * spends between 5 and 10 minutes retrying before a message is dead-lettered.
   */
  maxAttempts?: number;
  /** Ceiling of the first retry's delay; each later retry doubles the ceiling (a delay drawn between half of it and all of it). Default: 1000 ms. */
  initialDelayMs?: number;
  /** Cap on any retry's delay ceiling, at most 86400000 (24 h). Default: 120000 ms. */
  maxDelayMs?: number;
  /** Errors (by class, `instanceof`) dead-lettered at once, on top of `NonRetryableError` and its subclasses. Default: none. */
  nonRetryableErrors?: ErrorClass[];
  /** Returns false for an error that retrying cannot fix; it is dead-lettered at once. Default: every other error is retried. */
  isRetryable?: (error: unknown) => boolean;
  /**
   * Deliveries that ended with no outcome (the process died mid-handler, the connection dropped) tolerated
   * before the message is dead-lettered as `redelivery-limit`, so a message that crashes the process cannot
   * loop. Default: 5.
   */
  maxRedeliveries?: number;
}

/** Retry options with every default applied and checked. */
export interface ResolvedRetryOptions {
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  nonRetryableErrors: ErrorClass[];
  isRetryable: Array<(error: unknown) => boolean>;
  maxRedeliveries: number;
}

/** The longest retry delay the options accept (24 h, below what the delay levels hold, retry/delay-levels.ts). */
export const MAX_RETRY_DELAY_MS = 86_400_000;

/** Every key of RetryOptions, for the startup check that refuses a key it does not know. */
export const RETRY_OPTION_KEYS = optionKeys<RetryOptions>({
  maxAttempts: true,
  initialDelayMs: true,
  maxDelayMs: true,
  nonRetryableErrors: true,
  isRetryable: true,
  maxRedeliveries: true,
});

export const DEFAULT_RETRY_MAX_ATTEMPTS = 12;
export const DEFAULT_RETRY_INITIAL_DELAY_MS = 1000;
export const DEFAULT_RETRY_MAX_DELAY_MS = 120_000;
export const DEFAULT_RETRY_MAX_REDELIVERIES = 5;

/** The module-wide retry options, defaults applied; `where` names the option in error messages. */
export function resolveRetryOptions(
  options: RetryOptions | undefined,
  where = 'retry',
): ResolvedRetryOptions {
  return mergeRetryOptions(
    {
      maxAttempts: DEFAULT_RETRY_MAX_ATTEMPTS,
      initialDelayMs: DEFAULT_RETRY_INITIAL_DELAY_MS,
      maxDelayMs: DEFAULT_RETRY_MAX_DELAY_MS,
      nonRetryableErrors: [],
      isRetryable: [],
      maxRedeliveries: DEFAULT_RETRY_MAX_REDELIVERIES,
    },
    options,
    where,
  );
}

/**
 * Applies a consumer's retry options over resolved defaults: numbers replace, error classes and the predicate
 * add. Throws a ConfigurationError naming `where` (e.g. `OrderHandler.onPlaced retry`) when one is wrong.
 */
export function mergeRetryOptions(
  base: ResolvedRetryOptions,
  options: RetryOptions | undefined,
  where: string,
): ResolvedRetryOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new ConfigurationError(`ReliableMessaging: '${where}' must be an object like { maxAttempts: 6 }`);
  }
  const own = options ?? {};
  assertKnownKeys(own, RETRY_OPTION_KEYS, 'ReliableMessaging', `${where}.`);
  if (own.nonRetryableErrors !== undefined && !Array.isArray(own.nonRetryableErrors)) {
    throw nonRetryableErrorsError(where);
  }
  const initialDelayMs = own.initialDelayMs ?? base.initialDelayMs;
  const resolved: ResolvedRetryOptions = {
    maxAttempts: own.maxAttempts ?? base.maxAttempts,
    initialDelayMs,
    maxDelayMs: own.maxDelayMs ?? Math.max(base.maxDelayMs, initialDelayMs),
    nonRetryableErrors: [...base.nonRetryableErrors, ...(own.nonRetryableErrors ?? [])],
    isRetryable: own.isRetryable === undefined ? base.isRetryable : [...base.isRetryable, own.isRetryable],
    maxRedeliveries: own.maxRedeliveries ?? base.maxRedeliveries,
  };
  assertInteger(`${where}.maxAttempts`, resolved.maxAttempts, 1, 100);
  assertInteger(`${where}.initialDelayMs`, resolved.initialDelayMs, 0, MAX_RETRY_DELAY_MS);
  assertInteger(`${where}.maxDelayMs`, resolved.maxDelayMs, resolved.initialDelayMs, MAX_RETRY_DELAY_MS);
  assertInteger(`${where}.maxRedeliveries`, resolved.maxRedeliveries, 0, 1000);
  if (resolved.nonRetryableErrors.some((c) => typeof c !== 'function')) throw nonRetryableErrorsError(where);
  if (resolved.isRetryable.some((predicate) => typeof predicate !== 'function')) {
    throw new ConfigurationError(
      `ReliableMessaging: '${where}.isRetryable' must be a function (error) => boolean`,
    );
  }
  return resolved;
}

function nonRetryableErrorsError(where: string): ConfigurationError {
  return new ConfigurationError(
    `ReliableMessaging: '${where}.nonRetryableErrors' must be a list of error classes, e.g. [PaymentDeclinedError]`,
  );
}
