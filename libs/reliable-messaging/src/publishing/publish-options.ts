import type { EntityManager } from 'typeorm';

/** Per-call options of `MessagePublisher.publish()`; each overrides what the message class declares. */
export interface PublishOptions {
  /** Business key consumers deduplicate on. Default: the message class's `idempotencyKey(message)`; one is required. */
  idempotencyKey?: string;
  /**
   * Ordering key (1 to 256 characters): key-ordered consumers handle the messages of one key in publish order.
   * Default: the message class's `orderingKey(message)`, else the message's own id (ordered with nothing else).
   */
  orderingKey?: string;
  /** Correlation id. Default: the handled message's correlation id inside a handler, else the new messageId. */
  correlationId?: string;
  /** Causation id. Default: the handled message's messageId inside a handler. */
  causationId?: string;
  /** When the fact happened. Default: now. */
  occurredAt?: Date;
  /** Routing key. Default: the message type. */
  routingKey?: string;
  /** Exchange. Default: the module's events exchange. */
  exchange?: string;
  /** Extra string headers. Names starting with `rm-` are reserved and refused. */
  headers?: Record<string, string>;
  /** The transaction to write the outbox row in. Default: the transaction active in async context. */
  manager?: EntityManager;
}

/** A message given without a `@MessageType()` class: its type, version, plain payload and keys. */
export interface RawMessage {
  type: string;
  /** Schema version `major.minor`. Default: `1.0`. */
  version?: string;
  payload: Record<string, unknown>;
  /** Its business key, as a class's `idempotencyKey(message)` gives it; the publish options' key overrides it. */
  idempotencyKey?: string;
  /** Its ordering key, as a class's `orderingKey(message)` gives it; the publish options' key overrides it. */
  orderingKey?: string;
}
