import type { Message } from 'amqplib';
import { bodyMessageId } from './body-message-id';
import { uuidv7 } from './uuid-v7';
import type { OutboundMessage } from './envelope';

/**
 * The same message again, for the module to publish elsewhere (a retry, a redelivery checkpoint, a dead letter,
 * a replay): the same body and properties (message id, type, content type and encoding, correlation id, app id,
 * timestamp, priority, and the reply-to address of a request, so that its retry can still answer) with the given
 * headers. The expiration of a request is not kept: a dead letter or a retry waiting in a delay level must not
 * vanish when its caller's timeout passes. A message without an id gets `fallbackMessageId` (the id its envelope
 * was read with). Else a message in Nest's shape (no `type`) gets the id made from its body
 * (envelope/body-message-id.ts), since a copy made before it was decoded, such as a redelivery checkpoint, must
 * carry the id the decoder would give the original; any other message gets a new id, so two distinct messages
 * with the same body never share one.
 */
export function republish(
  message: Pick<Message, 'content' | 'properties'>,
  target: { exchange: string; routingKey: string },
  headers: Record<string, unknown>,
  options: { fallbackMessageId?: string; body?: Buffer } = {},
): OutboundMessage {
  const properties = message.properties;
  return {
    exchange: target.exchange,
    routingKey: target.routingKey,
    body: options.body ?? message.content,
    properties: {
      messageId:
        text(properties.messageId) ??
        options.fallbackMessageId ??
        (text(properties.type) === undefined ? bodyMessageId(message.content) : uuidv7()),
      type: text(properties.type),
      contentType: text(properties.contentType),
      contentEncoding: text(properties.contentEncoding),
      correlationId: text(properties.correlationId),
      appId: text(properties.appId),
      timestamp: typeof properties.timestamp === 'number' ? properties.timestamp : undefined,
      replyTo: text(properties.replyTo),
      priority: typeof properties.priority === 'number' ? properties.priority : undefined,
      headers,
    },
  };
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
