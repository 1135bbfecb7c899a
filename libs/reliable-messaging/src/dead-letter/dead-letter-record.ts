import type { Message } from 'amqplib';
import { DEAD_LETTER_HEADERS, HEADERS } from '../reliable-messaging.constants';
import { scrubCredentials } from '../util/scrub-credentials';
import { consumerQueueOf } from './dead-letter-queue';

/**
 * A message in a dead-letter queue, read from its headers: those this module writes when it dead-letters, or,
 * for a message the broker dead-lettered itself (a quorum queue's delivery-limit backstop), its x-death record.
 * Every header is a claim: a message the broker dead-letters (an expiration, the delivery limit) or one published
 * straight to the dead-letter exchange keeps whatever its publisher wrote. Only the queue it sits in is a fact.
 */
export interface DeadLetter {
  /** The dead-letter queue it sits in. */
  deadLetterQueue: string;
  /**
   * The consumer queue of the dead-letter queue it sits in (`orders.dlq` → `orders`), where a replay sends it.
   * Never read from a header: whoever can put a message into `orders.dlq` can publish to `orders` as well, so
   * replaying there grants nothing.
   */
  queue: string;
  /**
   * The queue its `rm-dead-letter-queue` header names, when that differs from `queue`: a forged or misrouted
   * dead letter. Shown as a warning; nothing routes on it.
   */
  claimedQueue?: string;
  messageId?: string;
  /** The message type (`type` property). */
  type?: string;
  idempotencyKey?: string;
  correlationId?: string;
  /** Why: `attempts-exhausted`, `non-retryable`, `redelivery-limit`, an invalid-input reason, or the broker's (`delivery_limit`, ...). */
  reason: string;
  errorClass?: string;
  errorMessage?: string;
  /** Truncated to 2000 characters when dead-lettered. */
  errorStack?: string;
  /** The consumer, `Class.method`. */
  handler?: string;
  /** The host whose process dead-lettered it. */
  host?: string;
  /** The exchange and routing key it was first published with, as its headers claim: history, never a route. */
  exchange?: string;
  routingKey?: string;
  /** Attempts made before it was dead-lettered. */
  attempts?: number;
  /** How many times it has been dead-lettered (it grows when a replayed message fails again). */
  deadLetterCount: number;
  firstFailureAt?: Date;
  /** When it was (last) dead-lettered. */
  deadLetteredAt?: Date;
  /** When it was last replayed, if it was. */
  replayedAt?: Date;
  contentType?: string;
  /** The body as it sits in the dead-letter queue (empty, or without its stored property, when claim-checked). */
  body: Buffer;
  /**
   * A claim-checked dead letter's whole message, its stored body (or property) put back from the claim-check
   * store; set by DeadLetterOperations.show() when the store has it, undefined otherwise.
   */
  fullBody?: Buffer;
  headers: Record<string, unknown>;
  /** The AMQP properties as received. */
  properties: Message['properties'];
}

/** Reads a message taken from `deadLetterQueue`. Never throws: a header of the wrong shape reads as absent. */
export function readDeadLetter(
  message: Pick<Message, 'content' | 'properties'>,
  deadLetterQueue: string,
): DeadLetter {
  const headers = (message.properties.headers ?? {}) as Record<string, unknown>;
  const death = lastDeath(headers);
  const h = (name: string) => text(headers[name]);
  // Dead letters written before error texts were scrubbed, or by another publisher, may still quote a password.
  const scrubbed = (name: string) => {
    const value = h(name);
    return value === undefined ? undefined : scrubCredentials(value);
  };
  const queue = consumerQueueOf(deadLetterQueue);
  const claimed = h(DEAD_LETTER_HEADERS.queue);
  return {
    deadLetterQueue,
    queue,
    ...(claimed !== undefined && claimed !== queue ? { claimedQueue: claimed } : {}),
    messageId: text(message.properties.messageId),
    type: text(message.properties.type),
    idempotencyKey: h(HEADERS.idempotencyKey) ?? text(message.properties.messageId),
    // A flow's first message carries no correlation id: it is its own message id (docs/envelope.md).
    correlationId: text(message.properties.correlationId) ?? text(message.properties.messageId),
    reason: h(DEAD_LETTER_HEADERS.reason) ?? text(death?.reason) ?? 'unknown',
    errorClass: h(DEAD_LETTER_HEADERS.errorClass),
    errorMessage: scrubbed(DEAD_LETTER_HEADERS.errorMessage),
    errorStack: scrubbed(DEAD_LETTER_HEADERS.errorStack),
    handler: h(DEAD_LETTER_HEADERS.handler),
    host: h(DEAD_LETTER_HEADERS.host),
    exchange: h(DEAD_LETTER_HEADERS.exchange) ?? text(death?.exchange),
    routingKey: h(DEAD_LETTER_HEADERS.routingKey) ?? firstText(death?.['routing-keys']),
    attempts: count(headers[DEAD_LETTER_HEADERS.attempts]),
    deadLetterCount: count(headers[DEAD_LETTER_HEADERS.count]) ?? (death ? 1 : 0),
    firstFailureAt: headerDate(headers[DEAD_LETTER_HEADERS.firstFailureAt]) ?? headerDate(death?.time),
    deadLetteredAt: headerDate(headers[DEAD_LETTER_HEADERS.lastFailureAt]) ?? headerDate(death?.time),
    replayedAt: headerDate(headers[DEAD_LETTER_HEADERS.replayedAt]),
    contentType: text(message.properties.contentType),
    body: message.content,
    headers,
    properties: message.properties,
  };
}

/** The whole message (`fullBody` when read, else `body`) as text when it is valid UTF-8, else undefined. */
export function bodyText(deadLetter: Pick<DeadLetter, 'body' | 'fullBody'>): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(deadLetter.fullBody ?? deadLetter.body);
  } catch {
    return undefined;
  }
}

/** The most recent x-death entry (RabbitMQ keeps them newest first). */
function lastDeath(headers: Record<string, unknown>): Record<string, unknown> | undefined {
  const deaths = headers['x-death'];
  if (!Array.isArray(deaths) || deaths.length === 0) return undefined;
  const first = deaths[0] as unknown;
  return typeof first === 'object' && first !== null ? (first as Record<string, unknown>) : undefined;
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

function firstText(value: unknown): string | undefined {
  return Array.isArray(value) ? text(value[0]) : text(value);
}

function count(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : Number(text(value));
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** A header's time: an ISO string, or an AMQP timestamp (seconds) as amqplib decodes it: `{ '!': 'timestamp', value }`. */
export function headerDate(value: unknown): Date | undefined {
  let parsed: Date | undefined;
  if (typeof value === 'string' || Buffer.isBuffer(value)) parsed = new Date(text(value) as string);
  else if (typeof value === 'object' && value !== null && (value as { '!'?: unknown })['!'] === 'timestamp') {
    // A publisher may put any table here: only a number (or a bigint amqplib read) is a time.
    const seconds = (value as { value: unknown }).value;
    if (typeof seconds === 'number' || typeof seconds === 'bigint') parsed = new Date(Number(seconds) * 1000);
  } else if (value instanceof Date) parsed = value;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed : undefined;
}
