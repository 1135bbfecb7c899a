/** Injection token of the resolved, validated options (ResolvedMessagingOptions). */
export const RESOLVED_MESSAGING_OPTIONS = Symbol('RESOLVED_MESSAGING_OPTIONS');
/**
 * What saga steps' timeouts use, `SagaTimeoutServices` (the publisher, the scheduled messages): provided under a
 * token so that the reliability pipeline, which the publisher's own dependencies reach, does not import them.
 */
export const SAGA_TIMEOUT_SERVICES = Symbol('SAGA_TIMEOUT_SERVICES');
/** Metadata key under which `@Consume()` stores its options on a method. */
export const CONSUME_METADATA = 'reliable-messaging:consume';
/** Metadata key under which `@Publish()` stores its options on a method. */
export const PUBLISH_METADATA = 'reliable-messaging:publish';
/** Metadata key under which `@Saga()` stores its options on a class. */
export const SAGA_METADATA = 'reliable-messaging:saga';
/** Metadata key under which `@SagaStep()` stores its message class and options on a method. */
export const SAGA_STEP_METADATA = 'reliable-messaging:saga-step';
/** Metadata key under which `@MessageType()` stores the message definition on a class. */
export const MESSAGE_TYPE_METADATA = 'reliable-messaging:message-type';

/** The context type handlers run under, as seen by Nest guards, interceptors and filters (`host.getType()`). */
export const RMQ_CONTEXT_TYPE = 'rmq';

/**
 * Header names of the envelope. Any AMQP client can publish and read messages with these headers;
 * see docs/envelope.md for which are required and what happens when one is missing.
 */
export const HEADERS = {
  idempotencyKey: 'rm-idempotency-key',
  schemaVersion: 'rm-schema-version',
  occurredAt: 'rm-occurred-at',
  causationId: 'rm-causation-id',
  orderingKey: 'rm-ordering-key',
  attempt: 'rm-attempt',
  /** When the first attempt failed; set by the first retry and kept until the message succeeds or dead-letters. */
  firstFailureAt: 'rm-first-failure-at',
  /** Deliveries that ended with no outcome (the process died, the connection dropped), counted by the module. */
  redeliveries: 'rm-redeliveries',
  /** The exchange and routing key the message was first published with, kept across retries and replays. */
  originalExchange: 'rm-original-exchange',
  originalRoutingKey: 'rm-original-routing-key',
  /** The queue a delayed retry goes back to (the retry deliver exchange routes on it). */
  retryQueue: 'rm-retry-queue',
  /** The claim check's reference to the body kept in its store; the wire body is then empty (or lacks the field). */
  claimCheck: 'rm-claim-check',
  /** The stored body's size in bytes. */
  claimCheckBytes: 'rm-claim-check-bytes',
  /** The stored body's SHA-256, lower-case hex; checked before the body is decoded. */
  claimCheckSha256: 'rm-claim-check-sha256',
  /** Set when one property was stored rather than the whole body: its name. */
  claimCheckField: 'rm-claim-check-field',
  /** The lane a message asks for (`publish(m, { lane })`); a consumer with lanes routes on it (docs/lanes.md). */
  lane: 'rm-lane',
  /** When a scheduled message was due (docs/scheduling.md); written as it enters the outbox. */
  scheduledFor: 'rm-scheduled-for',
  traceparent: 'traceparent',
  tracestate: 'tracestate',
} as const;

/** Headers a dead-lettered message gains; its original headers and body are kept as they were. */
export const DEAD_LETTER_HEADERS = {
  reason: 'rm-dead-letter-reason',
  errorClass: 'rm-dead-letter-error-class',
  errorMessage: 'rm-dead-letter-error-message',
  errorStack: 'rm-dead-letter-error-stack',
  queue: 'rm-dead-letter-queue',
  exchange: 'rm-dead-letter-exchange',
  routingKey: 'rm-dead-letter-routing-key',
  handler: 'rm-dead-letter-handler',
  attempts: 'rm-dead-letter-attempts',
  firstFailureAt: 'rm-dead-letter-first-failure-at',
  lastFailureAt: 'rm-dead-letter-last-failure-at',
  host: 'rm-dead-letter-host',
  count: 'rm-dead-letter-count',
  /** When the message was last replayed from its dead-letter queue. */
  replayedAt: 'rm-dead-letter-replayed-at',
  /**
   * The reference of the dead letter's own copy of its claim-checked body (equal to `rm-claim-check`), set only
   * by the module when it made that copy; purging the dead letter deletes the copy (docs/claim-check.md).
   */
  claimCheckCopy: 'rm-dead-letter-claim-check',
} as const;

export const JSON_CONTENT_TYPE = 'application/json';

/** Metadata key under which `@Idempotent()` stores its options on a route handler. */
export const IDEMPOTENT_METADATA = 'reliable-messaging:idempotent';

/** The request header carrying a client's idempotency key (draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/** Set to `true` on a response replayed from the idempotency key's stored response instead of running the handler. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/**
 * The prefix of the key that the rows of one transaction written without an ordering key share. Such a key holds
 * its later rows behind one that waits out a retry, but not behind a parked one: a message that can never be
 * published leaves its transaction's sequence, as a dead letter leaves a key's on the consumer's side, where a
 * user's key stays held until an operator retries or discards it.
 * Reserved: an ordering key of a publisher's own must not start with it.
 */
export const TRANSACTION_GROUP_PREFIX = 'rm-transaction:';
