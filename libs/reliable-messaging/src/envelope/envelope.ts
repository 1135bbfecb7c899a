/** What every message carries besides its payload, read from its AMQP properties and headers. */
export interface Envelope {
  /** Unique per message (UUIDv7 from this module); a plain client's message without one gets its idempotency key. */
  messageId: string;
  /** The business key consumers deduplicate on. */
  idempotencyKey: string;
  /** The message type, e.g. `order.placed`. */
  type: string;
  /** Schema version `major.minor`. */
  schemaVersion: string;
  /** When the fact happened at its source. */
  occurredAt: Date;
  /** Shared by every message of one business flow. */
  correlationId: string;
  /** The messageId of the message whose handling caused this one, if any. */
  causationId?: string;
  /**
   * Messages with the same ordering key are handled in order by key-ordered consumers. This module's publishers
   * set the message's id when there is no key of its own; other publishers may leave it out.
   */
  orderingKey?: string;
  /** W3C trace context. */
  traceparent?: string;
  tracestate?: string;
  /** The producing application (`app_id`). */
  appId?: string;
  /** All headers as received. */
  headers: Readonly<Record<string, unknown>>;
}

/** A message ready for the wire: where it goes, its body and its AMQP properties. Stored as-is in the outbox. */
export interface OutboundMessage {
  exchange: string;
  routingKey: string;
  body: Buffer;
  properties: OutboundProperties;
  /**
   * The message's own ordering key, when it has one: the outbox keeps a key's messages in order. The
   * `rm-ordering-key` header carries the message id instead when it has none, which orders it with nothing else.
   */
  orderingKey?: string;
  /** The body the claim check keeps in its store, until the publisher has written it there; never on the wire. */
  claimCheck?: PendingClaimCheck;
}

/** A body on its way to the claim-check store: where it goes and what it is. */
export interface PendingClaimCheck {
  location: string;
  body: Buffer;
  info: { id: string; expiresAt: Date; messageType: string };
}

/** The AMQP properties of an outgoing message; this module's own messages set every one. */
export interface OutboundProperties {
  messageId: string;
  type?: string;
  contentType?: string;
  contentEncoding?: string;
  correlationId?: string;
  appId?: string;
  timestamp?: number;
  /** Where a request's reply goes; set on requests and kept by their retries. */
  replyTo?: string;
  /** The AMQP priority (`publish(m, { priority })`), kept by retries and dead letters. */
  priority?: number;
  headers: Record<string, unknown>;
}
