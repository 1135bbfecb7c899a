import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { Channel, ConsumeMessage, MessageProperties } from 'amqplib';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Min, ValidateNested } from 'class-validator';
import { HEADERS } from '../reliable-messaging.constants';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { InvalidMessageError, type InvalidMessageReason } from '../errors/invalid-message.error';
import { DEFAULT_JSON_LIMITS } from '../options/json-limits.options';
import { decodeStage } from './decode.middleware';
import { InboundDelivery } from './inbound-delivery';

class OrderLine {
  @IsString() sku!: string;
  @IsInt() @Min(1) qty!: number;
}

class OrderPlaced {
  @IsString() orderId!: string;
  @IsInt() totalCents!: number;
  @IsOptional() @IsString() note?: string;
  @ValidateNested({ each: true }) @Type(() => OrderLine) lines!: OrderLine[];
  /** No validation decorator: whitelisting strips it like an unknown field. */
  internalFlag?: boolean;
}

const MAX_BYTES = 1024;

/** What the decode stage reads of a consumer's plan. */
type DecodePlan = Parameters<typeof decodeStage>[0];

function consumer(overrides: Partial<DecodePlan> = {}): DecodePlan {
  return {
    name: 'OrderHandler.onOrderPlaced',
    messageClass: OrderPlaced,
    messageTypes: ['order.placed'],
    acceptedMajorVersions: [1],
    jsonLimits: DEFAULT_JSON_LIMITS,
    maxPayloadBytes: MAX_BYTES,
    accept: ['envelope'],
    ...overrides,
  };
}

const VALID = { orderId: 'o-1', totalCents: 500, lines: [{ sku: 'a', qty: 2 }] };

function delivery(
  body: unknown,
  properties: Partial<MessageProperties> = {},
  definition: DecodePlan = consumer(),
): InboundDelivery {
  const content = Buffer.isBuffer(body)
    ? body
    : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const raw = {
    content,
    fields: {
      deliveryTag: 1,
      redelivered: false,
      exchange: 'events',
      routingKey: 'order.placed',
      consumerTag: 'c',
    },
    properties: {
      messageId: 'm-1',
      type: 'order.placed',
      contentType: 'application/json',
      ...properties,
      headers: { [HEADERS.idempotencyKey]: 'k-1', [HEADERS.schemaVersion]: '1.0', ...properties.headers },
    },
  } as ConsumeMessage;
  // Decoding never settles, so the channel is never touched.
  return new InboundDelivery(raw, definition as ConsumerPlan, {} as Channel);
}

/** Runs the decode stage; resolves with what reached the next stage, or the refusal. */
async function decode(
  target: InboundDelivery,
): Promise<{ payload?: unknown; reason?: InvalidMessageReason; message?: string; nextCalled: boolean }> {
  let nextCalled = false;
  const handler = decodeStage(target.consumer)(async () => {
    nextCalled = true;
  });
  try {
    await handler(target);
    return { payload: target.payload, nextCalled };
  } catch (error) {
    if (!(error instanceof InvalidMessageError)) throw error;
    return { reason: error.reason, message: error.message, nextCalled };
  }
}

describe('decodeStage', () => {
  it('hands the next stage a validated instance of the message class, with the envelope and attempt read', async () => {
    const target = delivery(VALID, { headers: { [HEADERS.attempt]: 3 } });

    const result = await decode(target);

    expect(result.nextCalled).toBe(true);
    expect(result.payload).toBeInstanceOf(OrderPlaced);
    expect((result.payload as OrderPlaced).lines[0]).toBeInstanceOf(OrderLine);
    expect(result.payload).toEqual(VALID);
    expect(target.envelope?.idempotencyKey).toBe('k-1');
    expect(target.attempt).toBe(3);
  });

  it('strips fields it does not know (and undecorated ones) instead of refusing the message', async () => {
    const result = await decode(
      delivery({
        ...VALID,
        giftWrap: true,
        internalFlag: true,
        lines: [{ sku: 'a', qty: 1, colour: 'red' }],
      }),
    );

    expect(result.nextCalled).toBe(true);
    expect({ ...(result.payload as object) }).toEqual({
      orderId: 'o-1',
      totalCents: 500,
      lines: [expect.any(OrderLine)],
    });
    expect({ ...(result.payload as OrderPlaced).lines[0] }).toEqual({ sku: 'a', qty: 1 });
  });

  it.each(['1.0', '1.1', '1.99'])('accepts schema version %s of the declared major', async (version) => {
    const result = await decode(delivery(VALID, { headers: { [HEADERS.schemaVersion]: version } }));
    expect(result.nextCalled).toBe(true);
  });

  it('accepts every major the consumer lists', async () => {
    const definition = consumer({ acceptedMajorVersions: [1, 2] });
    const result = await decode(delivery(VALID, { headers: { [HEADERS.schemaVersion]: '2.3' } }, definition));
    expect(result.nextCalled).toBe(true);
  });

  it('accepts any version and any type when the consumer declares none', async () => {
    const definition = consumer({ acceptedMajorVersions: [], messageTypes: [], messageClass: undefined });
    const result = await decode(
      delivery([1, 2], { type: 'anything.else', headers: { [HEADERS.schemaVersion]: '7.0' } }, definition),
    );
    expect(result).toEqual({ payload: [1, 2], nextCalled: true });
  });

  it.each<[string, InboundDelivery, InvalidMessageReason, RegExp]>([
    [
      'a newer major version',
      delivery(VALID, { headers: { [HEADERS.schemaVersion]: '2.0' } }),
      'unsupported-schema-version',
      /schema version 2\.0 of 'order\.placed' is not supported by OrderHandler\.onOrderPlaced \(accepts major 1\)/,
    ],
    [
      'an older major version',
      delivery(VALID, { headers: { [HEADERS.schemaVersion]: '0.9' } }),
      'unsupported-schema-version',
      /accepts major 1/,
    ],
    [
      'another message type',
      delivery(VALID, { type: 'order.cancelled' }),
      'unknown-message-type',
      /'order\.cancelled' is not handled by OrderHandler\.onOrderPlaced \(accepts order\.placed\)/,
    ],
    [
      'a body over the size limit',
      delivery({ ...VALID, note: 'x'.repeat(MAX_BYTES) }),
      'payload-too-large',
      /body is \d+ bytes, above the limit of 1024/,
    ],
    ['a body that is not JSON', delivery('{"orderId":'), 'malformed-json', /not valid JSON/],
    ['a body of invalid UTF-8', delivery(Buffer.from([0xc3, 0x28])), 'invalid-utf8', /UTF-8/],
    ['a __proto__ key', delivery('{"__proto__":{"x":1}}'), 'forbidden-key', /forbidden/],
    [
      'a body nested past jsonLimits.maxDepth',
      delivery(`{"orderId":"o-1","x":${'['.repeat(400)}${']'.repeat(400)}}`),
      'json-too-deep',
      /^json-too-deep: x\.0\.0.* nests deeper than 32 levels \(jsonLimits\.maxDepth\)$/,
    ],
    [
      'a duplicate key',
      delivery('{"orderId":"o-1","totalCents":1,"totalCents":2,"lines":[]}'),
      'json-duplicate-key',
      /^json-duplicate-key: totalCents appears more than once$/,
    ],
    [
      'a number JSON cannot hold as a finite double',
      delivery('{"orderId":"o-1","totalCents":1e400,"lines":[]}'),
      'json-number-out-of-range',
      /^json-number-out-of-range: totalCents must be a finite number$/,
    ],
    [
      'an integer beyond 2^53 - 1',
      delivery('{"orderId":"o-1","totalCents":9007199254740993,"lines":[]}'),
      'json-number-out-of-range',
      /totalCents must be an integer from -9007199254740991 to 9007199254740991/,
    ],
    ['a JSON array', delivery([VALID]), 'validation-failed', /body must be a JSON object/],
    ['JSON null', delivery('null'), 'validation-failed', /body must be a JSON object/],
    [
      'a wrong field type',
      delivery({ ...VALID, totalCents: '500' }),
      'validation-failed',
      /^validation-failed: totalCents: totalCents must be an integer number$/,
    ],
    [
      'a missing field',
      delivery({ totalCents: 1, lines: [] }),
      'validation-failed',
      /orderId: orderId must be a string/,
    ],
    [
      'an invalid nested field, naming its path',
      delivery({
        ...VALID,
        lines: [
          { sku: 'a', qty: 1 },
          { sku: 'b', qty: 0 },
        ],
      }),
      'validation-failed',
      /lines\.1\.qty: qty must not be less than 1/,
    ],
    ['a missing type property', delivery(VALID, { type: undefined }), 'missing-header', /'type' property/],
  ])('refuses %s without calling the handler', async (_what, target, reason, message) => {
    const result = await decode(target);

    expect(result.reason).toBe(reason);
    expect(result.message).toMatch(message);
    expect(result.nextCalled).toBe(false);
  });

  it('keeps the envelope it read when the body is refused, for the dead-letter headers', async () => {
    const target = delivery('{oops');
    await decode(target);
    expect(target.envelope?.messageId).toBe('m-1');
  });

  describe("with accept: ['envelope', 'nest-rmq']", () => {
    const nestConsumer = consumer({ accept: ['envelope', 'nest-rmq'] });
    /** A body as Nest's RMQ ClientProxy.emit() sends it: no type, no message id, no headers. */
    const nest = (body: unknown, properties: Partial<MessageProperties> = {}) => {
      const target = delivery(
        body,
        { type: undefined, messageId: undefined, contentType: undefined, ...properties },
        nestConsumer,
      );
      target.raw.properties.headers = properties.headers ?? {};
      return target;
    };
    const packet = { pattern: 'order.placed', data: VALID };

    it("reads Nest's {pattern, data} body: the pattern as the type, data as the payload, an id from the body", async () => {
      const first = nest(packet);
      const again = nest(packet);

      const result = await decode(first);
      await decode(again);

      expect(result.nextCalled).toBe(true);
      expect(result.payload).toBeInstanceOf(OrderPlaced);
      expect(result.payload).toEqual(VALID);
      expect(first.envelope).toMatchObject({ type: 'order.placed', schemaVersion: '1.0' });
      expect(first.envelope?.messageId).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(first.envelope?.idempotencyKey).toBe(first.envelope?.messageId);
      expect(again.envelope?.messageId).toBe(first.envelope?.messageId);
    });

    it('takes the message_id and timestamp properties when the producer set them', async () => {
      const target = nest(packet, { messageId: 'nest-1', timestamp: 1_700_000_000 });
      await decode(target);
      expect(target.envelope).toMatchObject({
        messageId: 'nest-1',
        idempotencyKey: 'nest-1',
        occurredAt: new Date(1_700_000_000_000),
      });
    });

    it('takes the idempotency key from rm-idempotency-key when the producer set it', async () => {
      const target = nest(packet, { headers: { [HEADERS.idempotencyKey]: 'order-placed:o-1' } });
      await decode(target);
      expect(target.envelope?.idempotencyKey).toBe('order-placed:o-1');
      expect(target.envelope?.messageId).toMatch(/^sha256:/);
    });

    it('still reads the envelope of a message with the type property', async () => {
      const target = delivery(VALID, {}, nestConsumer);
      const result = await decode(target);
      expect(result.nextCalled).toBe(true);
      expect(target.envelope?.messageId).toBe('m-1');
    });

    it.each<[string, InboundDelivery, InvalidMessageReason, RegExp]>([
      [
        'another pattern',
        nest({ pattern: 'order.cancelled', data: VALID }),
        'unknown-message-type',
        /pattern 'order\.cancelled' is not handled by OrderHandler\.onOrderPlaced \(accepts order\.placed\)/,
      ],
      [
        'invalid data',
        nest({ pattern: 'order.placed', data: { ...VALID, totalCents: 'many' } }),
        'validation-failed',
        /totalCents must be an integer number/,
      ],
      ['no data', nest({ pattern: 'order.placed' }), 'validation-failed', /body must be a JSON object/],
      [
        'a __proto__ key in data',
        nest('{"pattern":"order.placed","data":{"__proto__":{"admin":true}}}'),
        'forbidden-key',
        /forbidden/,
      ],
      [
        'a __proto__ key beside the pattern',
        nest('{"pattern":"order.placed","__proto__":{"admin":true},"data":{}}'),
        'forbidden-key',
        /forbidden/,
      ],
      [
        'a body over the size limit, before it is parsed',
        nest({ pattern: 'order.placed', data: { ...VALID, note: 'x'.repeat(MAX_BYTES) } }),
        'payload-too-large',
        /above the limit of 1024/,
      ],
      ['a body that is not JSON', nest('{"pattern":'), 'malformed-json', /not valid JSON/],
      ['a JSON array', nest([packet]), 'invalid-wire-format', /\{pattern, data\}/],
      ['no pattern', nest({ data: VALID }), 'invalid-wire-format', /'pattern' must be a non-empty string/],
      [
        'an object pattern',
        nest({ pattern: { cmd: 'place' }, data: VALID }),
        'invalid-wire-format',
        /'pattern' must be a non-empty string/,
      ],
      ['a key Nest does not write', nest({ ...packet, extra: 1 }), 'invalid-wire-format', /the key 'extra'/],
      [
        'a send() request, which waits for a reply in Nest format',
        nest({ ...packet, id: 'r-1' }, { replyTo: 'amq.rabbitmq.reply-to', correlationId: 'r-1' }),
        'invalid-wire-format',
        /ClientProxy\.send\(\) request for 'order\.placed'/,
      ],
      [
        'a malformed envelope header',
        nest(packet, { headers: { [HEADERS.schemaVersion]: 'latest' } }),
        'invalid-header',
        /must look like '1\.0'/,
      ],
    ])('refuses %s without calling the handler', async (_what, target, reason, message) => {
      const result = await decode(target);

      expect(result.reason).toBe(reason);
      expect(result.message).toMatch(message);
      expect(result.nextCalled).toBe(false);
    });

    it('refuses data nested past jsonLimits.maxDepth as json-too-deep, before it is parsed', async () => {
      const deep = `${'['.repeat(400)}${']'.repeat(400)}`;
      const body = `{"pattern":"order.placed","data":${JSON.stringify(VALID).slice(0, -1)},"deep":${deep}}}`;

      const result = await decode(nest(body));

      expect(result.reason).toBe('json-too-deep');
      expect(result.message).toMatch(/nests deeper than 32 levels \(jsonLimits\.maxDepth\)$/);
      expect(result.nextCalled).toBe(false);
    });

    it('takes deeply nested data within a raised maxDepth without a crash, stripping what the class does not declare', async () => {
      const depth = 400;
      const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
      const body = `{"pattern":"order.placed","data":${JSON.stringify(VALID).slice(0, -1)},"deep":${deep}}}`;
      const raised = consumer({
        accept: ['envelope', 'nest-rmq'],
        jsonLimits: { ...DEFAULT_JSON_LIMITS, maxDepth: 1_000 },
      });

      const result = await decode(delivery(body, { type: undefined, messageId: undefined }, raised));

      expect(result.nextCalled).toBe(true);
      expect({ ...(result.payload as object) }).toEqual({ ...VALID, lines: [expect.any(OrderLine)] });
    });

    it("leaves Nest's format refused as missing-header on a consumer that does not accept it", async () => {
      const result = await decode(delivery(packet, { type: undefined, messageId: undefined }));
      expect(result.reason).toBe('missing-header');
    });
  });
});
