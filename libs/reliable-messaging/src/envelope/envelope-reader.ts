import type { ConsumeMessage } from 'amqplib';
import { HEADERS, JSON_CONTENT_TYPE } from '../reliable-messaging.constants';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { parseSchemaVersion } from '../decorators/message-type.decorator';
import type { Envelope } from './envelope';

const MAX_ID_LENGTH = 256;
const MAX_ATTEMPT = 10_000;
const DEFAULT_SCHEMA_VERSION = '1.0';

/**
 * What a message of another wire format implies where it lacks the envelope's properties: its message type, and
 * a message id for when it carries no `message_id` (made only then).
 */
export interface ImpliedEnvelope {
  type: string;
  messageId: () => string;
}

/**
 * Reads and checks the envelope of a delivery. Required: a message type (the `type` property) and an
 * idempotency key (the `rm-idempotency-key` header, else the `message_id` property). Everything else has a
 * documented default. A header of the wrong shape is refused, so forged values never reach a handler. A message
 * of another wire format (envelope/nest-rmq-packet.ts) gives its type and id as `implied`.
 */
export function readEnvelope(message: ConsumeMessage, implied?: ImpliedEnvelope): Envelope {
  const { properties } = message;
  const headers = (properties.headers ?? {}) as Record<string, unknown>;

  const type = optionalText(properties.type, 'type') ?? implied?.type;
  if (!type) throw new InvalidMessageError('missing-header', "the 'type' property (message type) is missing");

  const messageId = optionalText(properties.messageId, 'message_id') ?? implied?.messageId();
  const idempotencyKey = optionalText(headers[HEADERS.idempotencyKey], HEADERS.idempotencyKey) ?? messageId;
  if (!idempotencyKey) {
    throw new InvalidMessageError(
      'missing-header',
      `neither the '${HEADERS.idempotencyKey}' header nor the 'message_id' property is set`,
    );
  }

  const schemaVersion =
    optionalText(headers[HEADERS.schemaVersion], HEADERS.schemaVersion) ?? DEFAULT_SCHEMA_VERSION;
  if (!parseSchemaVersion(schemaVersion)) {
    throw new InvalidMessageError('invalid-header', `'${HEADERS.schemaVersion}' must look like '1.0'`);
  }

  const contentType = optionalText(properties.contentType, 'content_type');
  if (contentType !== undefined && contentType.split(';')[0].trim().toLowerCase() !== JSON_CONTENT_TYPE) {
    throw new InvalidMessageError(
      'unsupported-content-type',
      `content type '${contentType}' is not ${JSON_CONTENT_TYPE}`,
    );
  }

  return {
    messageId: messageId ?? idempotencyKey,
    idempotencyKey,
    type,
    schemaVersion,
    occurredAt: readOccurredAt(headers[HEADERS.occurredAt], properties.timestamp),
    correlationId: optionalText(properties.correlationId, 'correlation_id') ?? messageId ?? idempotencyKey,
    causationId: optionalText(headers[HEADERS.causationId], HEADERS.causationId),
    orderingKey: optionalText(headers[HEADERS.orderingKey], HEADERS.orderingKey),
    traceparent: lenientText(headers[HEADERS.traceparent]),
    tracestate: lenientText(headers[HEADERS.tracestate]),
    appId: lenientText(properties.appId),
    headers,
  };
}

/** The attempt this delivery is (1 for the first), from the module's own `rm-attempt` header. */
export function readAttempt(message: ConsumeMessage): number {
  const raw = (message.properties.headers ?? {})[HEADERS.attempt] as unknown;
  if (raw === undefined || raw === null) return 1;
  const value = typeof raw === 'number' ? raw : Number(asText(raw));
  if (!Number.isInteger(value) || value < 1 || value > MAX_ATTEMPT) {
    throw new InvalidMessageError(
      'invalid-header',
      `'${HEADERS.attempt}' must be an integer from 1 to ${MAX_ATTEMPT}`,
    );
  }
  return value;
}

function readOccurredAt(header: unknown, timestamp: unknown): Date {
  if (header !== undefined && header !== null) {
    const text = asText(header);
    const date = text === undefined ? undefined : new Date(text);
    if (!date || Number.isNaN(date.getTime())) {
      throw new InvalidMessageError(
        'invalid-header',
        `'${HEADERS.occurredAt}' must be an ISO 8601 timestamp`,
      );
    }
    return date;
  }
  // A timestamp past a Date's range (±8.64e12 s) would make an Invalid Date, whose toISOString() throws in a handler.
  const date = typeof timestamp === 'number' ? new Date(timestamp * 1000) : undefined;
  return date && !Number.isNaN(date.getTime()) ? date : new Date();
}

function optionalText(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  const text = asText(value);
  if (text === undefined || text.length === 0 || text.length > MAX_ID_LENGTH) {
    throw new InvalidMessageError(
      'invalid-header',
      `'${name}' must be a non-empty string of at most ${MAX_ID_LENGTH} characters`,
    );
  }
  return text;
}

/** Trace headers are optional hints: a malformed one is dropped (as W3C asks), not an error. */
function lenientText(value: unknown): string | undefined {
  const text = asText(value);
  return text !== undefined && text.length > 0 && text.length <= 512 ? text : undefined;
}

function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}
