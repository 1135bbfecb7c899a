import { ConfigurationError } from '../errors/configuration.error';
import type { PublishOptions } from '../publishing/publish-options';

/**
 * Per-call options of `MessagePublisher.request()`: the publish options (routing, keys, headers) without
 * `manager`, since a request never goes through the outbox, and the timeout, which is required.
 */
export interface RequestOptions extends Omit<PublishOptions, 'manager'> {
  /**
   * How long to wait for the reply, in milliseconds (required, a positive finite number up to 24 hours). The
   * request expires in the broker after the same time, so one nobody took in time is not handled later.
   */
  timeoutMs: number;
  /** Stops waiting when it aborts: the call rejects with its reason and a later reply is dropped. Default: none. */
  signal?: AbortSignal;
}

/** The longest timeout a request may have: RabbitMQ's per-message TTL takes up to 2^32-1 ms, far beyond a call. */
const MAX_TIMEOUT_MS = 86_400_000;

/** The request's timeout, checked: a ConfigurationError that says what to pass when it is missing or wrong. */
export function requestTimeout(messageType: string, options: Partial<RequestOptions> | undefined): number {
  const timeoutMs = options?.timeoutMs;
  if (
    typeof timeoutMs !== 'number' ||
    !Number.isFinite(timeoutMs) ||
    timeoutMs <= 0 ||
    timeoutMs > MAX_TIMEOUT_MS
  ) {
    throw new ConfigurationError(
      `request() of '${messageType}' needs a timeout: pass { timeoutMs } as a positive number of milliseconds up to ` +
        `${MAX_TIMEOUT_MS}, e.g. request(message, { timeoutMs: 5000 }); got ${describe(timeoutMs)}`,
    );
  }
  return Math.ceil(timeoutMs);
}

function describe(value: unknown): string {
  if (value === undefined) return 'none';
  return typeof value === 'number' ? String(value) : `a ${typeof value}`;
}
