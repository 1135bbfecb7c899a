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
  /**
   * The lane the message goes to on consumers with lanes (docs/lanes.md), carried in the `rm-lane` header; a
   * consumer without that lane, or without lanes, takes it as any other message. Must be a lane this app knows (its
   * consumers' lanes and the module's `lanes` option). Default: the message class's `@MessageType({ lane })`, else
   * none (each consumer's default lane).
   */
  lane?: string;
  /**
   * The AMQP priority, an integer from 0 to 255: honoured by queues declared with `maxPriority` (classic), and by
   * quorum queues on RabbitMQ 4.x in two levels (5 and above is high); ignored elsewhere (docs/lanes.md). Default:
   * none (the lowest).
   */
  priority?: number;
  /** Extra string headers. Names starting with `rm-` are reserved and refused. */
  headers?: Record<string, string>;
  /**
   * Sends the message at this moment rather than now (docs/scheduling.md): it waits in the scheduled messages
   * table, written in the caller's transaction, enters the outbox when due and can be cancelled until then
   * (`ScheduledMessages.cancel()`). A moment not in the future sends it now. Needs the `dataSource` option; not
   * with `delayMs`. Default: none (sent once the transaction commits).
   */
  deliverAt?: Date;
  /**
   * Sends the message this many milliseconds after its transaction wrote it (on the database's clock), as
   * `deliverAt` does; 0 sends it now. A finite number, 0 or more; not with `deliverAt`. Default: none.
   */
  delayMs?: number;
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
  /** Its lane, as a class's `@MessageType({ lane })` gives it; the publish options' lane overrides it. */
  lane?: string;
}
