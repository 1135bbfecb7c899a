import type { Type } from '@nestjs/common';
import type { QueueType } from '../options/reliable-messaging.options';
import type { ConsumerOrdering } from '../ordering/consumer-ordering';
import type { IntakeStrategy } from '../intake/consumer-intake';
import type { RetryPolicy } from '../retry/retry-policy';
import type { RateLimit } from '../options/rate-limit.options';
import type { DeadlineSettings } from '../options/deadline-limits';
import type { ConsumerLane } from '../lanes/consumer-lane';
import type { WireFormat } from '../options/wire-format';
import type { JsonLimits } from '../options/json-limits.options';
import type { SagaStepPlan } from '../saga/saga-step-plan';

/** What `host.getType()` says inside a handler's enhancers. */
export type HandlerContextType = 'rmq' | 'rpc';

/**
 * Everything one consumer runs with: its `@Consume()` options over the module's defaults, resolved and
 * validated once at startup (consuming/consumer-planner.ts) and frozen. Topology, the runner and every pipeline
 * stage read their settings here; nothing reads the decorator's options again. A key-ordered `@Consume()` is one
 * plan per partition, a consumer with lanes one plan per lane.
 */
export interface ConsumerPlan {
  /** `Class.method`, recorded as the handler in logs, metrics and dead-letter headers. */
  readonly name: string;
  /** The provider instance and method the handler runs as. */
  readonly instance: object;
  readonly methodName: string;
  /**
   * The execution context type the handler's guards, interceptors and filters see: `rmq` for `@Consume()`,
   * `rpc` for an `@EventPattern()` served through ReliableMessagingTransport (as Nest's own transports do).
   */
  readonly contextType: HandlerContextType;
  /** The key of the Nest module that holds the instance: its guards, interceptors and pipes resolve there. */
  readonly moduleKey?: string;

  /** The durable queue this consumer reads (a partition queue `<queue>.p007` when ordered by key, `<queue>.<lane>` for a lane). */
  readonly queue: string;
  /** Its dead-letter queue, `<queue>.dlq`. */
  readonly deadLetterQueue: string;
  /** The events exchange the queue is bound to. */
  readonly exchange: string;
  /** Routing keys bound on the exchange: the message types and `routingKeys`; none for a partition or lane queue. */
  readonly bindings: readonly string[];
  /** `queueType`, default the module's `defaultQueueType` (quorum). */
  readonly queueType: QueueType;
  /** Every argument the queue is declared with: the module's own (dead-lettering, quorum backstop) win. */
  readonly queueArguments: Readonly<Record<string, unknown>>;
  /**
   * The arguments the consumer asks for on top of the module's own: `queueArguments`, `x-max-priority` for a
   * classic queue with `maxPriority`, and single-active-consumer when ordered.
   */
  readonly extraQueueArguments: Readonly<Record<string, unknown>>;
  /** `maxPriority` (of the lane, else the consumer): undefined when its queue does not take priorities (the default). */
  readonly maxPriority?: number;
  /** The lane this plan runs when the consumer has lanes; undefined otherwise. */
  readonly lane?: ConsumerLane;

  /** Handlers running at once: `concurrency`, default the module's `defaultConcurrency`; 1 when ordered. */
  readonly concurrency: number;
  /** Deliveries the broker sends ahead: `prefetch`, default the module's `defaultPrefetch`, else the concurrency (1 when ordered). */
  readonly prefetch: number;
  /** At most `limit` handler starts per `periodMs`; undefined for no limit (the default). */
  readonly rateLimit?: Readonly<RateLimit>;
  /** The handler deadline, `deadlineMs` or the module's `defaultDeadlineMs`, and how far it may be extended. */
  readonly deadline: Readonly<DeadlineSettings>;

  /** The class payloads are validated into; undefined hands the handler the parsed JSON. */
  readonly messageClass?: Type<object>;
  /** Message types the handler accepts; a delivery of another type is dead-lettered. Empty accepts any. */
  readonly messageTypes: readonly string[];
  /** Schema major versions accepted. Empty accepts any. */
  readonly acceptedMajorVersions: readonly number[];
  /** The largest body accepted, the module's `maxPayloadBytes`. */
  readonly maxPayloadBytes: number;
  /** The shape a body's JSON may have, the module's `jsonLimits`. */
  readonly jsonLimits: Readonly<JsonLimits>;
  /** The wire formats read (`accept`, default `['envelope']`): `nest-rmq` adds Nest's `{pattern, data}` body. */
  readonly accept: readonly WireFormat[];

  /** The retry policy: the module's `retry` with the consumer's own `retry` over it. */
  readonly retry: RetryPolicy;
  /**
   * Present when the consumer deduplicates through the inbox (`dedup`, default on with a `dataSource`). `scope` is
   * the queue its inbox rows are recorded under: the queue named in `@Consume()`, which the partitions of a
   * key-ordered consumer share, since a key moves between partitions when their number changes, and which the
   * lanes of a consumer share, since one message may be published on two lanes.
   */
  readonly dedup?: { readonly scope: string };
  /**
   * Whether the handler answers requests (`reply`, default false; true for an `@MessagePattern()`): its return
   * value is sent to a message's `replyTo` before the message is acknowledged (request-reply/reply.middleware.ts).
   */
  readonly reply: boolean;
  /** How its messages are ordered; default `{ mode: 'none' }`. */
  readonly ordering: ConsumerOrdering;
  /**
   * How it takes messages and gives them back, chosen by its ordering (ordering/ordering-plan.ts): ordered
   * consumers never let a message leave its place. The one thing that asks whether a consumer is ordered.
   */
  readonly intake: IntakeStrategy;
  /**
   * Present for a `@SagaStep()`: the saga the step belongs to and how it finds, starts and writes instances
   * (saga/saga-step-plan.ts). Its consumer always deduplicates: the step's transaction is the inbox's.
   */
  readonly saga?: SagaStepPlan;
}
