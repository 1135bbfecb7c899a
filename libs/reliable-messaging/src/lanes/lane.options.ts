import { ConfigurationError } from '../errors/configuration.error';
import type { RateLimit } from '../flow-control/rate-limit.middleware';

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

/** The queue of lane `lane` of the consumer of `queue`. */
export function laneQueueName(queue: string, lane: string): string {
  return `${queue}.${lane}`;
}

/** The headers exchange that routes a consumer's messages to its lanes by their `rm-lane` header. */
export function laneRouterName(queue: string): string {
  return `${queue}.lanes`;
}

/** The fanout exchange behind the router (its alternate exchange): a message no lane takes goes to the default lane. */
export function laneFallbackName(queue: string): string {
  return `${queue}.lanes.default`;
}

/**
 * The lane a consumer plan runs: which of its consumer's lanes it is and how the broker routes to it. The
 * lane's queue is bound to the router on its `rm-lane` header, the default lane's also to the fallback.
 */
export interface ConsumerLane {
  /** The lane's name, as publishers give it (`publish(message, { lane })`). */
  readonly name: string;
  /** The queue named in `@Consume()`; the lane queues are `<baseQueue>.<lane>`. */
  readonly baseQueue: string;
  /** The headers exchange `<baseQueue>.lanes`, bound to the events exchange with the consumer's routing keys. */
  readonly router: string;
  /** The fanout exchange `<baseQueue>.lanes.default`, the router's alternate exchange. */
  readonly fallback: string;
  /** Whether messages without a lane (or with a lane this consumer does not have) come here. */
  readonly isDefault: boolean;
  /** The routing keys the router is bound with on the events exchange. */
  readonly sourceBindings: readonly string[];
  /** Whether this is the consumer's last lane: its declaration (its last partition's, when ordered by key) binds the router, once every lane is bound. */
  readonly last: boolean;
}
