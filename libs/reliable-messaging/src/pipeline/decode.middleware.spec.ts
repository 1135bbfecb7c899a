import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { Channel, ConsumeMessage, MessageProperties } from 'amqplib';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Min, ValidateNested } from 'class-validator';
import { HEADERS } from '../reliable-messaging.constants';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { InvalidMessageError, type InvalidMessageReason } from '../errors/invalid-message.error';
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
    maxPayloadBytes: MAX_BYTES,
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
});
