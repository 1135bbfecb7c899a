import { ConfigurationError } from '../errors/configuration.error';

/**
 * The room kept between the longest a handler may run and the broker's consumer timeout (a tenth of it, at most
 * 10 s), so the module always settles a delivery before the broker gives up on it and closes the channel.
 */
export function consumerTimeoutMargin(consumerTimeoutMs: number): number {
  return Math.min(10_000, Math.floor(consumerTimeoutMs / 10));
}

/** The longest a handler may run, extensions included: the consumer timeout less its margin. */
export function maxDeadlineMs(consumerTimeoutMs: number): number {
  return consumerTimeoutMs - consumerTimeoutMargin(consumerTimeoutMs);
}

/** Throws a ConfigurationError naming `field` unless `value` is a deadline that fits under the consumer timeout. */
export function assertDeadline(field: string, value: unknown, consumerTimeoutMs: number): void {
  const max = maxDeadlineMs(consumerTimeoutMs);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new ConfigurationError(
      `ReliableMessaging: '${field}' must be an integer from 1 to ${max} ms (below consumerTimeoutMs ${consumerTimeoutMs} less its margin), ` +
        `got ${String(value)}; raise consumerTimeoutMs (and the broker's consumer_timeout on RabbitMQ before 3.12) for longer handlers`,
    );
  }
}

/** A consumer's resolved deadline settings. */
export interface DeadlineSettings {
  /** How long a handler may run before it counts as failed. */
  deadlineMs: number;
  /**
   * How far `extendDeadline()` may push it, counted from when the delivery arrived: the broker's consumer timeout
   * less its margin, which is also how long any stage may hold a delivery unsettled.
   */
  limitMs: number;
}
