import type { Type } from '@nestjs/common';
import type { ConsumeOptions } from '../decorators/consume.decorator';
import type { QueueType } from '../reliable-messaging.options';
import type { ConsumerOrdering } from '../ordering/ordering.options';

/** A discovered `@Consume()` handler with every option resolved; built once at startup. */
export interface ConsumerDefinition {
  /** `Class.method`, recorded as the handler in dead-letter headers. */
  name: string;
  queue: string;
  deadLetterQueue: string;
  exchange: string;
  /** Routing keys bound on the exchange. */
  bindings: string[];
  queueType: QueueType;
  /** Every argument the queue is declared with. */
  queueArguments: Record<string, unknown>;
  concurrency: number;
  prefetch: number;
  /** The class payloads are validated into; undefined hands the handler the parsed JSON. */
  messageClass?: Type<object>;
  /** Message types the handler accepts; a delivery of another type is dead-lettered. Empty accepts any. */
  messageTypes: string[];
  acceptedMajorVersions: number[];
  /** The provider instance and method the handler runs as. */
  instance: object;
  methodName: string;
  /** The options as written on the decorator, for later stages to read their own settings from. */
  options: ConsumeOptions;
  /** How its messages are ordered; a key-ordered `@Consume()` is one definition per partition. Default: none. */
  ordering?: ConsumerOrdering;
}

/** Whether a consumer keeps an order (by queue or by key), and so must never let a message leave its place. */
export function isOrdered(consumer: ConsumerDefinition): boolean {
  return consumer.ordering !== undefined && consumer.ordering.mode !== 'none';
}
