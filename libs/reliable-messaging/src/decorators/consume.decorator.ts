import { SetMetadata, type Type } from '@nestjs/common';
import type { QueueType } from '../reliable-messaging.options';
import { CONSUME_METADATA } from '../reliable-messaging.constants';

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
}

/**
 * Subscribes a provider method to a queue. The method receives the validated payload (an instance of its
 * message class) and a `MessageContext`; the message is acknowledged only after the returned promise resolves.
 *
 * @example
 * ＠Consume({ queue: 'payment.order-placed' })
 * async onOrderPlaced(event: OrderPlaced, ctx: MessageContext) { ... }
 */
export const Consume = (options: ConsumeOptions): MethodDecorator => SetMetadata(CONSUME_METADATA, options);
