import { describe, expect, it } from '@jest/globals';
import type { ConsumeMessage, MessageProperties } from 'amqplib';
import { bodyMessageId } from './body-message-id';
import { readNestRmqPacket } from './nest-rmq-packet';
import { republish } from './republish';

const TARGET = { exchange: 'events.delay', routingKey: 'delay.1000' };

function message(body: string, properties: Partial<MessageProperties> = {}): ConsumeMessage {
  return {
    content: Buffer.from(body),
    fields: {
      deliveryTag: 1,
      redelivered: true,
      exchange: 'events',
      routingKey: 'parcel.weighed',
      consumerTag: 'c',
    },
    properties: { headers: {}, ...properties },
  } as ConsumeMessage;
}

describe('republish', () => {
  it('keeps the message id the message has', () => {
    const copy = republish(message('{}', { messageId: 'm-1' }), TARGET, {}, { fallbackMessageId: 'other' });
    expect(copy.properties.messageId).toBe('m-1');
  });

  it('gives a message without an id the id its envelope was read with', () => {
    expect(republish(message('{}'), TARGET, {}, { fallbackMessageId: 'k-1' }).properties.messageId).toBe(
      'k-1',
    );
  });

  it("gives a copy made before decoding (a redelivery checkpoint) the id Nest's format is read with, so the inbox still knows it", () => {
    const nest = message('{"pattern":"parcel.weighed","data":{"parcelId":"p-1"}}');

    const copy = republish(nest, TARGET, {});

    expect(copy.properties.messageId).toBe(bodyMessageId(nest.content));
    expect(copy.properties.messageId).toBe(readNestRmqPacket(nest, nest.content).envelope.messageId);
    expect(republish(nest, TARGET, {}).properties.messageId).toBe(copy.properties.messageId);
  });

  it("gives an envelope-shaped message without an id (it has a type) a new id, never its body's: two such messages with one body stay two", () => {
    const first = republish(message('{"orderId":"o-1"}', { type: 'order.placed' }), TARGET, {});
    const second = republish(message('{"orderId":"o-1"}', { type: 'order.placed' }), TARGET, {});

    expect(first.properties.messageId).not.toBe(bodyMessageId(Buffer.from('{"orderId":"o-1"}')));
    expect(first.properties.messageId).not.toBe(second.properties.messageId);
  });
});
