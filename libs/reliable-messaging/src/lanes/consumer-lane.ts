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
