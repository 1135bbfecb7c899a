import type { Type } from '@nestjs/common';
import type { QueueType } from './reliable-messaging.options';
import { RETRY_OPTION_KEYS, type RetryOptions } from './retry.options';
import type { OrderingOption } from './ordering.options';
import type { LanesOption } from './lane.options';
import { RATE_LIMIT_OPTION_KEYS, type RateLimit } from './rate-limit.options';
import { assertKnownKeys, optionKeys } from './known-keys';
import type { WireFormat } from './wire-format';

/** Options of `@Consume()`. Defaults come from the module's options where named. */
export interface ConsumeOptions {
  /** The durable queue this consumer owns. Each consumer has its own queue and dead-letter queue (`<queue>.dlq`). */
  queue: string;
  /** Message class the payload is validated and transformed into. Default: the handler's first parameter type. */
  message?: Type<object>;
  /** Message types bound to the queue. Default: the message class's `@MessageType()` type. */
  messageTypes?: string[];
  /** Extra binding patterns on the events exchange (topic wildcards allowed). Default: none. */
  routingKeys?: string[];
  /** Schema major versions accepted. Default: the message class's major version. */
  acceptedMajorVersions?: number[];
  /** Handlers running at once. Default: the module's `defaultConcurrency` (10). */
  concurrency?: number;
  /** Unacknowledged deliveries the broker sends ahead. Default: the module's `defaultPrefetch`, else `concurrency`. */
  prefetch?: number;
  /** Queue type. Default: the module's `defaultQueueType` (quorum). */
  queueType?: QueueType;
  /** Extra queue arguments (for example `x-max-length`). The module's own arguments win on conflict. */
  queueArguments?: Record<string, unknown>;
  /**
   * How long a handler may run before its attempt is abandoned (signal aborted, transaction rolled back) and retried.
   * Set it above the handler's p99; `ctx.extendDeadline(ms)` pushes it back from inside a long handler. Default:
   * the module's `defaultDeadlineMs` (30000 ms).
   */
  deadlineMs?: number;
  /** At most `limit` handler starts per `periodMs` in this process, e.g. for a rate-limited external API. Default: none. */
  rateLimit?: RateLimit;
  /** Retries of this consumer's failures. Default: the module's `retry`; numbers set here replace it, error classes and the predicate add to it. */
  retry?: RetryOptions;
  /**
   * Deduplicate deliveries through the inbox: the handler runs in a transaction with the message's inbox row,
   * and a message whose idempotency key this consumer already handled is skipped and acknowledged. Set false
   * for a handler that is idempotent by construction. Default: true when the module has a `dataSource`.
   */
  dedup?: boolean;
  /**
   * Which messages are handled in order, and so one at a time (docs/ordering.md): `'none'`, in parallel and in
   * no order; `'queue'`, one at a time across all replicas, in queue order; `{ by: 'key', partitions: N }`, one
   * at a time per ordering key in publish order, different keys in parallel over N partition queues (needs the
   * `rabbitmq_consistent_hash_exchange` plugin). Ordered consumers ignore `concurrency` and retry in place.
   * Default: `'none'`.
   */
  ordering?: OrderingOption;
  /**
   * Answer requests (`MessagePublisher.request()`, docs/request-reply.md): the handler's return value is sent to
   * the message's `replyTo` after its work and before its acknowledgement; a failure that is dead-lettered is
   * answered with its error's name and message. A message without `replyTo` is handled and not answered.
   * Default: false.
   */
  reply?: boolean;
  /**
   * Lanes (docs/lanes.md): one queue per lane, `<queue>.<lane>`, each with its own dead-letter queue, channel,
   * concurrency, prefetch and rate limit (a lane's settings default to the consumer's), so that a backlog in one
   * lane does not hold up another. A publisher picks the lane per message (`publish(m, { lane })`, or the class's
   * `@MessageType({ lane })`); a message without a lane, or with one this consumer lacks, goes to `defaultLane`.
   * The lanes share the consumer's inbox, retries and dead-letter handling. Default: none (one queue).
   */
  lanes?: LanesOption;
  /** The lane messages without a lane go to. Default: the first lane in `lanes`. */
  defaultLane?: string;
  /**
   * Message priorities the queue honours, 1 to 255 (publish with `{ priority }`): a classic queue is declared with
   * `x-max-priority`; a quorum queue needs nothing declared and has two levels on RabbitMQ 4.x (priority 5 and above
   * is high), none on 3.x (docs/lanes.md). Set per lane in `lanes`. Default: none.
   */
  maxPriority?: number;
  /**
   * The wire formats this consumer reads, for a migration one service at a time (docs/migrating.md):
   * `['envelope', 'nest-rmq']` also accepts a message in Nest's RMQ format (`ClientProxy.emit()` of
   * @nestjs/microservices), read as the message type `pattern` with the payload `data`, so the consumer can move
   * before its producers. A message without the `type` property is read as Nest's; every limit and check of the
   * envelope applies to it. Must list `envelope`; a reply consumer takes no `nest-rmq` (Nest's `send()` waits for
   * a reply in Nest's own format). Default: `['envelope']`.
   */
  accept?: WireFormat[];
}

/** Every key of `@Consume()`'s options, for the startup check that refuses a key it does not know. */
export const CONSUME_OPTION_KEYS = optionKeys<ConsumeOptions>({
  queue: true,
  message: true,
  messageTypes: true,
  routingKeys: true,
  acceptedMajorVersions: true,
  concurrency: true,
  prefetch: true,
  queueType: true,
  queueArguments: true,
  deadlineMs: true,
  rateLimit: true,
  retry: true,
  dedup: true,
  ordering: true,
  reply: true,
  lanes: true,
  defaultLane: true,
  maxPriority: true,
  accept: true,
});

const KEY_ORDERING_KEYS = optionKeys<Extract<OrderingOption, object>>({ by: true, partitions: true });

/**
 * Refuses a `@Consume()` option (or one of its `retry`, `rateLimit` and `ordering` objects) it does not know,
 * naming the nearest known one; `where` names the handler (`@Consume on Billing.onOrderPlaced`). Lanes' own
 * settings are checked with the lanes (lanes/lane-plan.ts); `queueArguments` are the broker's, not checked.
 */
export function assertKnownConsumeOptions(options: object, where: string): void {
  assertKnownKeys(options, CONSUME_OPTION_KEYS, where);
  const { retry, rateLimit, ordering } = options as ConsumeOptions;
  if (isPlainObject(retry)) assertKnownKeys(retry, RETRY_OPTION_KEYS, where, 'retry.');
  if (isPlainObject(rateLimit)) assertKnownKeys(rateLimit, RATE_LIMIT_OPTION_KEYS, where, 'rateLimit.');
  if (isPlainObject(ordering)) assertKnownKeys(ordering, KEY_ORDERING_KEYS, where, 'ordering.');
}

function isPlainObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
