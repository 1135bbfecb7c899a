import type { Message } from 'amqplib';
import { uuidv7 } from '../envelope/uuid-v7';
import type { OutboundMessage } from '../envelope/envelope';
import { parseJsonBody } from '../envelope/safe-json';
import { DEFAULT_JSON_LIMITS, type JsonLimits } from '../options/json-limits.options';
import { RemoteHandlerError } from '../errors/remote-handler.error';
import { JSON_CONTENT_TYPE } from '../reliable-messaging.constants';
import { errorMessage } from '../util/error-text';

/**
 * RabbitMQ's direct reply-to pseudo-queue: a caller consumes it (no-ack) on a channel and publishes its
 * requests with it as `replyTo` on that same channel; the broker rewrites it into a name that routes a reply,
 * published on the default exchange, straight back to that channel, with no queue in between.
 */
export const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

/** The header that says whether a reply carries the handler's value (`ok`) or its error (`error`). */
export const REPLY_STATUS_HEADER = 'rm-reply-status';

/** What a responder answers: its handler's return value, or the error it failed with for good. */
export type ReplyOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** The request a reply answers: where to send it and what it correlates with. */
export interface RequestOrigin {
  replyTo: string;
  /** The request's message id, which the reply carries as its correlation id. */
  messageId: string;
  /** The request's message type; the reply's is `<type>.reply`. */
  type?: string;
}

/**
 * The reply to a request, for the default exchange with the caller's `replyTo` as routing key. The body is the
 * value as JSON (`null` for a handler that returned nothing), or `{ name, message }` of the error: never its
 * stack, which would show the responder's internals to another service. A value JSON cannot encode (a BigInt,
 * a cycle) becomes an error reply saying so.
 */
export function buildReply(origin: RequestOrigin, outcome: ReplyOutcome, appId?: string): OutboundMessage {
  let status: 'ok' | 'error' = outcome.ok ? 'ok' : 'error';
  let body: string;
  if (outcome.ok) {
    try {
      body = JSON.stringify(outcome.value ?? null);
    } catch (error) {
      status = 'error';
      body = JSON.stringify(
        describeError(new TypeError(`the reply cannot be encoded as JSON: ${describeError(error).message}`)),
      );
    }
  } else {
    body = JSON.stringify(describeError(outcome.error));
  }
  return {
    exchange: '',
    routingKey: origin.replyTo,
    body: Buffer.from(body, 'utf8'),
    properties: {
      messageId: uuidv7(),
      type: origin.type ? `${origin.type}.reply` : undefined,
      contentType: JSON_CONTENT_TYPE,
      correlationId: origin.messageId,
      appId,
      timestamp: Math.floor(Date.now() / 1000),
      headers: { [REPLY_STATUS_HEADER]: status },
    },
  };
}

/**
 * What a reply says, for the caller of request `messageType`: the value, or a RemoteHandlerError with the
 * remote error's name and message. A body that is not JSON within `jsonLimits` rejects with the
 * InvalidMessageError that says why.
 */
export function readReply(
  reply: Pick<Message, 'content' | 'properties'>,
  messageType: string,
  jsonLimits: Readonly<JsonLimits> = DEFAULT_JSON_LIMITS,
): ReplyOutcome {
  const status = (reply.properties.headers ?? {})[REPLY_STATUS_HEADER] as unknown;
  const body = parseJsonBody(reply.content, jsonLimits);
  if (status !== 'error' && !(Buffer.isBuffer(status) && status.toString('utf8') === 'error')) {
    return { ok: true, value: body };
  }
  const remote = (typeof body === 'object' && body !== null ? body : {}) as {
    name?: unknown;
    message?: unknown;
  };
  return {
    ok: false,
    error: new RemoteHandlerError(
      messageType,
      typeof remote.name === 'string' ? remote.name : 'Error',
      typeof remote.message === 'string' ? remote.message : String(body),
    ),
  };
}

function describeError(error: unknown): { name: string; message: string } {
  return { name: error instanceof Error ? error.name : 'Error', message: errorMessage(error) };
}
