import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';
import { assertInteger } from './option-assertions';

/**
 * Scheduled messages without an outbox (docs/scheduling.md, "Without an outbox"). With a `dataSource` scheduled
 * messages wait in its database and these options do not apply.
 */
export interface SchedulingOptions {
  /**
   * Without a `dataSource`: `publish(message, { deliverAt | delayMs })` sends the message into the broker's delay
   * levels, and a republisher in every process that consumes sends it on when due. Refused with a `dataSource`.
   * Default: false (a scheduled publish without a `dataSource` throws a ConfigurationError).
   */
  brokerDelays?: boolean;
  /**
   * The longest delay a scheduled message may have on the broker path, from 1000 ms to 104857500 ms (about 29 h,
   * what the delay levels hold). A longer one is refused at `publish()`; a message that arrives claiming a later due
   * time is dead-lettered. It also sets how many delay levels are declared. Default: 86400000 (24 h).
   */
  maxDelayMs?: number;
}

/** Scheduling options with every default applied and checked. */
export interface ResolvedSchedulingOptions {
  brokerDelays: boolean;
  maxDelayMs: number;
}

export const SCHEDULING_OPTION_KEYS = optionKeys<SchedulingOptions>({
  brokerDelays: true,
  maxDelayMs: true,
});

export const DEFAULT_SCHEDULING_MAX_DELAY_MS = 86_400_000;
/** The longest delay the delay levels hold: (2^20 - 1) × 100 ms (retry/delay-levels.ts, whose spec checks the two agree). */
export const MAX_BROKER_DELAY_MS = 104_857_500;

/** The scheduling options, defaults applied and checked; `withDataSource` refuses the broker path. */
export function resolveSchedulingOptions(
  options: SchedulingOptions | undefined,
  withDataSource: boolean,
): ResolvedSchedulingOptions {
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ConfigurationError(
        "ReliableMessagingModule: 'scheduling' must be an object like { brokerDelays: true }",
      );
    }
    assertKnownKeys(options, SCHEDULING_OPTION_KEYS, 'ReliableMessagingModule', 'scheduling.');
  }
  const resolved: ResolvedSchedulingOptions = {
    brokerDelays: options?.brokerDelays ?? false,
    maxDelayMs: options?.maxDelayMs ?? DEFAULT_SCHEDULING_MAX_DELAY_MS,
  };
  if (typeof resolved.brokerDelays !== 'boolean') {
    throw new ConfigurationError(
      `ReliableMessagingModule: 'scheduling.brokerDelays' must be true or false, got ${String(resolved.brokerDelays)}`,
    );
  }
  if (resolved.brokerDelays && withDataSource) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'scheduling.brokerDelays' is for apps without a dataSource; with one, scheduled " +
        'messages wait in its database (the outbox path) and can be cancelled: leave scheduling.brokerDelays out',
    );
  }
  assertInteger('scheduling.maxDelayMs', resolved.maxDelayMs, 1000, MAX_BROKER_DELAY_MS);
  return resolved;
}
