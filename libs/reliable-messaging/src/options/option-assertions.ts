import { ConfigurationError } from '../errors/configuration.error';

/** Throws a ConfigurationError naming `field` when `value` is not an integer within [min, max]. */
export function assertInteger(field: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(
      `ReliableMessaging: '${field}' must be an integer from ${min} to ${max}, got ${String(value)}`,
    );
  }
}

/** Throws a ConfigurationError when `value` is not a usable AMQP exchange or queue name. */
export function assertName(field: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > 255 || value.startsWith('amq.')) {
    throw new ConfigurationError(
      `ReliableMessaging: '${field}' must be a non-empty name of at most 255 characters not starting with 'amq.', got '${String(value)}'`,
    );
  }
}

/** Throws a ConfigurationError when `value` is not a known queue type. */
export function assertQueueType(field: string, value: string): void {
  if (value !== 'quorum' && value !== 'classic') {
    throw new ConfigurationError(
      `ReliableMessaging: '${field}' must be 'quorum' or 'classic', got '${value}'`,
    );
  }
}
