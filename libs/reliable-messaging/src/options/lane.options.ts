import { ConfigurationError } from '../errors/configuration.error';
import { optionKeys } from './known-keys';
import type { RateLimit } from './rate-limit.options';

/**
 * One lane of a consumer (`@Consume({ lanes })`): its own queue `<queue>.<lane>`, dead-letter queue, channel,
 * prefetch, concurrency and rate limit. A setting left out is the consumer's own, then the module's default.
 */
export interface LaneOptions {
  /** Handlers of this lane running at once. Default: the consumer's `concurrency`, else the module's `defaultConcurrency`. */
  concurrency?: number;
  /** Deliveries the broker sends ahead on this lane. Default: the consumer's `prefetch`, else the module's `defaultPrefetch`, else the lane's concurrency. */
  prefetch?: number;
  /** At most `limit` handler starts per `periodMs` on this lane. Default: the consumer's `rateLimit` (none). */
  rateLimit?: RateLimit;
  /** Priorities the lane's queue honours (docs/lanes.md). Default: the consumer's `maxPriority` (none). */
  maxPriority?: number;
}

/** Every setting a lane has. */
export const LANE_OPTION_KEYS = optionKeys<LaneOptions>({
  concurrency: true,
  prefetch: true,
  rateLimit: true,
  maxPriority: true,
});

/** A consumer's lanes by name: `{ urgent: { concurrency: 10 }, bulk: { concurrency: 2 } }`. */
export type LanesOption = Record<string, LaneOptions>;

/** Lane names: short, lower case, usable in a queue name and a header. */
const LANE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** The most lanes one consumer may have; each is a queue, a dead-letter queue and a channel. */
export const MAX_LANES = 16;

/** Whether `value` is a valid lane name. */
export function isLaneName(value: unknown): value is string {
  return typeof value === 'string' && LANE_NAME.test(value);
}

/** Throws a ConfigurationError saying what a lane name looks like, when `value` is not one. */
export function assertLaneName(value: unknown, where: string): string {
  if (!isLaneName(value)) {
    throw new ConfigurationError(
      `${where}: a lane name is 1 to 64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit, ` +
        `got ${typeof value === 'string' ? `'${value.slice(0, 80)}'` : typeof value}`,
    );
  }
  if (RESERVED_LANE_NAME.test(value)) {
    throw new ConfigurationError(
      `${where}: '${value}' cannot name a lane: the lane's queue '<queue>.${value}' would take a name the module ` +
        "gives other things ('dlq' dead-letter queues, 'lanes' the lane router, 'p000' to 'p999' partitions)",
    );
  }
  return value;
}

/** Lane names whose queue `<queue>.<lane>` would look like a dead-letter queue, the lane router or a partition. */
const RESERVED_LANE_NAME = /^(dlq|lanes|p\d{3})$/;
