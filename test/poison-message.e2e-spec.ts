import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import type { Options } from 'amqplib';
import { IsInt, IsString } from 'class-validator';
import {
  Consume,
  HEADERS,
  type InvalidMessageReason,
  type MessageContext,
  MessageType,
} from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({
  type: 'order.placed',
  version: '1.3',
  idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}`,
})
class OrderPlaced {
  @IsString() orderId!: string;
  @IsInt() totalCents!: number;
}

const QUEUE = uniqueQueue('poison');
const MAX_PAYLOAD_BYTES = 4096;

@Injectable()
class OrderHandler {
  readonly received: Array<{ event: OrderPlaced; ctx: MessageContext }> = [];

  @Consume({ queue: QUEUE, routingKeys: ['order.#'], concurrency: 2 })
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<void> {
    this.received.push({ event, ctx });
  }
}

/** What a plain AMQP client sends when it gets the envelope right. */
function validProperties(id: string, headers: Record<string, unknown> = {}): Options.Publish {
  return {
    messageId: id,
    type: 'order.placed',
    contentType: 'application/json',
    persistent: true,
    headers: {
      [HEADERS.idempotencyKey]: `key-${id}`,
      [HEADERS.schemaVersion]: '1.3',
      'x-case': id,
      ...headers,
    },
  };
}

const GOOD_BODY = JSON.stringify({ orderId: 'o-1', totalCents: 100 });

interface BadInput {
  name: string;
  reason: InvalidMessageReason;
  body: Buffer | string;
  properties?: (id: string) => Options.Publish;
  routingKey?: string;
  /** Part of the error message recorded in the dead-letter headers. */
  error: RegExp;
}

const BAD_INPUTS: BadInput[] = [
  {
    name: 'a body that is not JSON',
    reason: 'malformed-json',
    body: '{"orderId": "o-1", ',
    error: /not valid JSON/,
  },
  {
    name: 'a body of invalid UTF-8',
    reason: 'invalid-utf8',
    body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
    error: /UTF-8/,
  },
  {
    name: 'a body with a __proto__ key',
    reason: 'forbidden-key',
    body: '{"orderId":"o-1","totalCents":1,"__proto__":{"polluted":"yes"}}',
    error: /forbidden/,
  },
  {
    name: 'a body with a nested constructor.prototype key',
    reason: 'forbidden-key',
    body: '{"orderId":"o-1","totalCents":1,"meta":{"constructor":{"prototype":{"polluted":"yes"}}}}',
    error: /forbidden/,
  },
  {
    name: 'a payload failing validation',
    reason: 'validation-failed',
    body: '{"orderId":"o-1","totalCents":"a lot"}',
    error: /totalCents: totalCents must be an integer number/,
  },
  {
    name: 'a JSON array instead of an object',
    reason: 'validation-failed',
    body: '[1,2]',
    error: /JSON object/,
  },
  {
    name: 'an oversized body',
    reason: 'payload-too-large',
    body: JSON.stringify({ orderId: 'o-1', totalCents: 1, note: 'x'.repeat(MAX_PAYLOAD_BYTES) }),
    error: /above the limit of 4096/,
  },
  {
    name: "a missing 'type' property",
    reason: 'missing-header',
    body: GOOD_BODY,
    properties: (id) => ({ ...validProperties(id), type: undefined }),
    error: /'type' property/,
  },
  {
    name: 'neither an idempotency key nor a message id',
    reason: 'missing-header',
    body: GOOD_BODY,
    properties: (id) => ({
      ...validProperties(id),
      messageId: undefined,
      headers: { [HEADERS.schemaVersion]: '1.3', 'x-case': id },
    }),
    error: /rm-idempotency-key/,
  },
  {
    name: 'an unsupported schema major version',
    reason: 'unsupported-schema-version',
    body: GOOD_BODY,
    properties: (id) => validProperties(id, { [HEADERS.schemaVersion]: '2.0' }),
    error: /schema version 2\.0 .*\(accepts major 1\)/,
  },
  {
    name: 'a malformed schema version',
    reason: 'invalid-header',
    body: GOOD_BODY,
    properties: (id) => validProperties(id, { [HEADERS.schemaVersion]: 'v1' }),
    error: /rm-schema-version/,
  },
  {
    name: 'a malformed attempt header',
    reason: 'invalid-header',
    body: GOOD_BODY,
    properties: (id) => validProperties(id, { [HEADERS.attempt]: 'first' }),
    error: /rm-attempt/,
  },
  {
    name: 'a content type other than JSON',
    reason: 'unsupported-content-type',
    body: GOOD_BODY,
    properties: (id) => ({ ...validProperties(id), contentType: 'application/xml' }),
    error: /application\/xml/,
  },
  {
    name: 'a message type the consumer does not handle',
    reason: 'unknown-message-type',
    body: GOOD_BODY,
    properties: (id) => ({ ...validProperties(id), type: 'order.cancelled' }),
    routingKey: 'order.cancelled',
    error: /'order\.cancelled' is not handled/,
  },
];

describe('poison messages: each bad input is dead-lettered with its reason and the consumer goes on', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: OrderHandler;
  let exchange: string;
  let sequence = 0;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [OrderHandler],
      options: { maxPayloadBytes: MAX_PAYLOAD_BYTES },
    });
    handler = app.get(OrderHandler);
    exchange = `${broker.prefix}.events`;
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it.each(BAD_INPUTS.map((input) => [input.name, input] as const))(
    '%s goes to the dead-letter queue and the next message is handled',
    async (_name, input) => {
      const id = `case-${++sequence}`;
      const properties = input.properties?.(id) ?? validProperties(id);
      const content = typeof input.body === 'string' ? Buffer.from(input.body) : input.body;
      await broker.publishRaw(
        { exchange, routingKey: input.routingKey ?? 'order.placed' },
        content,
        properties,
      );
      const goodId = `good-after-${id}`;
      await broker.publishRaw({ exchange, routingKey: 'order.placed' }, GOOD_BODY, validProperties(goodId));

      const [deadLetter] = await broker.waitForMessages(`${QUEUE}.dlq`, 1);
      await waitFor('the good message after it', () =>
        handler.received.some(({ ctx }) => ctx.envelope.messageId === goodId),
      );

      const headers = deadLetter.properties.headers ?? {};
      expect(headers['x-case']).toBe(id);
      expect(deadLetter.content.equals(content)).toBe(true);
      expect(headers).toMatchObject({
        [DEAD_LETTER_HEADERS.reason]: input.reason,
        [DEAD_LETTER_HEADERS.errorClass]: 'InvalidMessageError',
        [DEAD_LETTER_HEADERS.errorMessage]: expect.stringMatching(input.error),
        [DEAD_LETTER_HEADERS.queue]: QUEUE,
        [DEAD_LETTER_HEADERS.exchange]: exchange,
        [DEAD_LETTER_HEADERS.routingKey]: input.routingKey ?? 'order.placed',
        [DEAD_LETTER_HEADERS.handler]: 'OrderHandler.onOrderPlaced',
        [DEAD_LETTER_HEADERS.attempts]: 1,
        [DEAD_LETTER_HEADERS.count]: 1,
      });
      expect(deadLetter.properties.type).toBe(properties.type);
      expect(handler.received.map(({ ctx }) => ctx.envelope.messageId)).not.toContain(id);
      expect((await (await broker.openChannel()).checkQueue(QUEUE)).messageCount).toBe(0);
    },
  );

  it('parses hostile keys without polluting any prototype', () => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('polluted');
    expect((OrderPlaced.prototype as unknown as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('accepts a newer minor version and strips the fields it does not know', async () => {
    const id = 'newer-minor';
    const body = JSON.stringify({ orderId: 'o-9', totalCents: 900, giftWrap: true, coupon: { code: 'X' } });
    await broker.publishRaw(
      { exchange, routingKey: 'order.placed' },
      body,
      validProperties(id, { [HEADERS.schemaVersion]: '1.9' }),
    );

    await waitFor('the newer message to be handled', () =>
      handler.received.some(({ ctx }) => ctx.envelope.messageId === id),
    );
    const { event, ctx } = handler.received.find(({ ctx }) => ctx.envelope.messageId === id)!;
    expect(ctx.envelope.schemaVersion).toBe('1.9');
    expect(event).toBeInstanceOf(OrderPlaced);
    expect({ ...event }).toEqual({ orderId: 'o-9', totalCents: 900 });
  });

  it('handled every good message exactly once and kept its consumer and logs free of crashes', async () => {
    const good = handler.received.map(({ ctx }) => ctx.envelope.messageId);
    expect(good).toHaveLength(BAD_INPUTS.length + 1);
    expect(new Set(good).size).toBe(good.length);
    expect(handler.received.every(({ ctx }) => !ctx.redelivered && ctx.attempt === 1)).toBe(true);
    expect(app.logger.find('error', /./)).toEqual([]);
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(0);
  });
});
