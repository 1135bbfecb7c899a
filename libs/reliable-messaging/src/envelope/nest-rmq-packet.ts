import type { ConsumeMessage } from 'amqplib';
import { InvalidMessageError } from '../errors/invalid-message.error';
import type { Envelope } from './envelope';
import { bodyMessageId } from './body-message-id';
import { readEnvelope } from './envelope-reader';
import { parseJsonBody } from './safe-json';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from '../options/json-limits.options';

/** What Nest's RMQ `ClientProxy` writes in a body: `emit()` the pattern and data, `send()` its request id too. */
const PACKET_KEYS: ReadonlySet<string> = new Set(['pattern', 'data', 'id']);
const MAX_PATTERN_LENGTH = 256;

/**
 * Whether a delivery on a consumer that accepts `nest-rmq` is read as Nest's format: it has no `type` property,
 * which the module's own publishers always set and Nest's RMQ `ClientProxy` never does.
 */
export function isNestRmqDelivery(message: ConsumeMessage): boolean {
  const type: unknown = message.properties.type;
  return type === undefined || type === null;
}

/**
 * Reads a body in Nest's RMQ wire format, `{"pattern": "order.paid", "data": {...}}`, as the envelope it lacks
 * and the payload (`data`). The body is parsed exactly as an envelope's (strict UTF-8, within `jsonLimits`; the
 * caller checks its size first), and the envelope's headers are checked as for any message. What Nest does not
 * send is filled in (docs/migrating.md):
 * - the message type is `pattern`, which the consumer's message types then check;
 * - the message id and idempotency key are the `message_id` property when the producer set one (with
 *   `RmqRecordBuilder`), else `sha256:<hex>` of the body (envelope/body-message-id.ts), so a redelivery of the
 *   same message, and its retries, carry the same id and the inbox skips it once handled. Two emits of the same pattern and data are
 *   then one message to the inbox: a producer whose repeats matter sets a `message_id`;
 * - `occurredAt` is the `timestamp` property, else the arrival; the schema version `rm-schema-version`, else 1.0.
 * A `send()` request (an `id` in the body, or a `reply_to`) is refused: its caller waits for a reply in Nest's
 * format, which no consumer of this module writes.
 */
export function readNestRmqPacket(
  message: ConsumeMessage,
  body: Buffer,
  jsonLimits: Readonly<JsonLimits> = DEFAULT_JSON_LIMITS,
): { envelope: Envelope; data: unknown } {
  const packet = parseJsonBody(body, jsonLimits);
  if (typeof packet !== 'object' || packet === null || Array.isArray(packet)) {
    throw invalid("body must be Nest's RMQ packet, a JSON object {pattern, data}");
  }
  const extra = Object.keys(packet).find((key) => !PACKET_KEYS.has(key));
  if (extra !== undefined) {
    throw invalid(
      `body has the key '${extra.slice(0, 64)}', which Nest's RMQ packet {pattern, data} has not`,
    );
  }
  const { pattern, data, id } = packet as Record<string, unknown>;
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > MAX_PATTERN_LENGTH) {
    throw invalid(`'pattern' must be a non-empty string of at most ${MAX_PATTERN_LENGTH} characters`);
  }
  if (id !== undefined || message.properties.replyTo) {
    throw invalid(
      `a ClientProxy.send() request for '${pattern}' waits for a reply in Nest's format, which this consumer does not write; send it with ReliableMessagingClient`,
    );
  }
  const envelope = readEnvelope(message, {
    type: pattern,
    messageId: () => bodyMessageId(message.content),
  });
  return { envelope, data };
}

function invalid(problem: string): InvalidMessageError {
  return new InvalidMessageError('invalid-wire-format', problem);
}
