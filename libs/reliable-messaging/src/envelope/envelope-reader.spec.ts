import { describe, expect, it } from '@jest/globals';
import type { ConsumeMessage, MessageProperties } from 'amqplib';
import { HEADERS } from '../reliable-messaging.constants';
import { InvalidMessageError, type InvalidMessageReason } from '../errors/invalid-message.error';
import { readAttempt, readEnvelope } from './envelope-reader';

/** A delivery as amqplib hands it over, with only the given properties set. */
function delivery(properties: Partial<MessageProperties> = {}): ConsumeMessage {
  return {
    content: Buffer.from('{}'),
    fields: {
      deliveryTag: 1,
      redelivered: false,
      exchange: 'events',
      routingKey: 'order.placed',
      consumerTag: 'c',
    },
    properties: { headers: {}, ...properties } as MessageProperties,
  };
}

function refusal(read: () => unknown): { reason: InvalidMessageReason; message: string } {
  try {
    read();
  } catch (error) {
    if (error instanceof InvalidMessageError) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error('the delivery was accepted');
}

describe('readEnvelope', () => {
  it('reads every field of a message this module published', () => {
    const envelope = readEnvelope(
      delivery({
        messageId: '0190a6f0-0000-7000-8000-000000000001',
        type: 'order.placed',
        contentType: 'application/json',
        correlationId: 'checkout-1',
        appId: 'order-service',
        timestamp: 1_700_000_000,
        headers: {
          [HEADERS.idempotencyKey]: 'order-placed:o-1',
          [HEADERS.schemaVersion]: '1.4',
          [HEADERS.occurredAt]: '2026-01-02T03:04:05.678Z',
          [HEADERS.causationId]: '0190a6f0-0000-7000-8000-000000000000',
          [HEADERS.orderingKey]: 'o-1',
          [HEADERS.traceparent]: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
          [HEADERS.tracestate]: 'vendor=1',
          'x-tenant': 'acme',
        },
      }),
    );

    expect(envelope).toEqual({
      messageId: '0190a6f0-0000-7000-8000-000000000001',
      idempotencyKey: 'order-placed:o-1',
      type: 'order.placed',
      schemaVersion: '1.4',
      occurredAt: new Date('2026-01-02T03:04:05.678Z'),
      correlationId: 'checkout-1',
      causationId: '0190a6f0-0000-7000-8000-000000000000',
      orderingKey: 'o-1',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=1',
      appId: 'order-service',
      headers: expect.objectContaining({ 'x-tenant': 'acme' }),
    });
  });

  it("gives a plain client's minimal message (type and message_id) the documented defaults", () => {
    const before = Date.now();
    const envelope = readEnvelope(delivery({ messageId: 'm-1', type: 'order.placed' }));

    expect(envelope).toMatchObject({
      messageId: 'm-1',
      idempotencyKey: 'm-1',
      schemaVersion: '1.0',
      correlationId: 'm-1',
      causationId: undefined,
      orderingKey: undefined,
      traceparent: undefined,
    });
    expect(envelope.occurredAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(envelope.occurredAt.getTime()).toBeLessThanOrEqual(Date.now());
  });

  it('takes occurredAt from the AMQP timestamp (seconds) when the header is absent', () => {
    const envelope = readEnvelope(delivery({ messageId: 'm-1', type: 't', timestamp: 1_700_000_000 }));
    expect(envelope.occurredAt).toEqual(new Date(1_700_000_000_000));
  });

  it('uses the idempotency key as messageId and correlationId when message_id is absent', () => {
    const envelope = readEnvelope(delivery({ type: 't', headers: { [HEADERS.idempotencyKey]: 'k-1' } }));
    expect(envelope).toMatchObject({ messageId: 'k-1', idempotencyKey: 'k-1', correlationId: 'k-1' });
  });

  it('reads header values that arrive as byte arrays', () => {
    const envelope = readEnvelope(
      delivery({ type: 't', headers: { [HEADERS.idempotencyKey]: Buffer.from('k-bytes') } }),
    );
    expect(envelope.idempotencyKey).toBe('k-bytes');
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'Application/JSON', undefined])(
    'accepts the content type %s',
    (contentType) => {
      expect(readEnvelope(delivery({ messageId: 'm', type: 't', contentType })).type).toBe('t');
    },
  );

  it('drops a trace header that is empty or too long instead of refusing the message', () => {
    const envelope = readEnvelope(
      delivery({
        messageId: 'm',
        type: 't',
        headers: { [HEADERS.traceparent]: 'x'.repeat(513), [HEADERS.tracestate]: '' },
      }),
    );
    expect(envelope.traceparent).toBeUndefined();
    expect(envelope.tracestate).toBeUndefined();
  });

  it.each<[string, Partial<MessageProperties>, InvalidMessageReason, RegExp]>([
    ["no 'type' property", { messageId: 'm' }, 'missing-header', /'type' property/],
    ['an empty type', { messageId: 'm', type: '' }, 'invalid-header', /'type' must be a non-empty string/],
    [
      'no idempotency key and no message_id',
      { type: 't' },
      'missing-header',
      /neither the 'rm-idempotency-key'/,
    ],
    [
      'an idempotency key of 257 characters',
      { type: 't', headers: { [HEADERS.idempotencyKey]: 'k'.repeat(257) } },
      'invalid-header',
      /at most 256 characters/,
    ],
    [
      'a numeric idempotency key',
      { type: 't', headers: { [HEADERS.idempotencyKey]: 42 } },
      'invalid-header',
      /'rm-idempotency-key' must be a non-empty string/,
    ],
    [
      'a schema version without a minor',
      { messageId: 'm', type: 't', headers: { [HEADERS.schemaVersion]: '2' } },
      'invalid-header',
      /'rm-schema-version' must look like '1.0'/,
    ],
    [
      'a schema version with a prefix',
      { messageId: 'm', type: 't', headers: { [HEADERS.schemaVersion]: 'v1.0' } },
      'invalid-header',
      /'rm-schema-version'/,
    ],
    [
      'a content type other than JSON',
      { messageId: 'm', type: 't', contentType: 'text/plain' },
      'unsupported-content-type',
      /content type 'text\/plain' is not application\/json/,
    ],
    [
      'an occurredAt that is not a date',
      { messageId: 'm', type: 't', headers: { [HEADERS.occurredAt]: 'yesterday' } },
      'invalid-header',
      /'rm-occurred-at' must be an ISO 8601 timestamp/,
    ],
    [
      'an occurredAt given as a number',
      { messageId: 'm', type: 't', headers: { [HEADERS.occurredAt]: 1_700_000_000 } },
      'invalid-header',
      /'rm-occurred-at'/,
    ],
    [
      'an empty correlation id',
      { messageId: 'm', type: 't', correlationId: '' },
      'invalid-header',
      /'correlation_id'/,
    ],
  ])('refuses %s', (_what, properties, reason, message) => {
    const error = refusal(() => readEnvelope(delivery(properties)));
    expect(error.reason).toBe(reason);
    expect(error.message).toMatch(message);
  });
});

describe('readAttempt', () => {
  it.each<[unknown, number]>([
    [undefined, 1],
    [null, 1],
    [1, 1],
    [3, 3],
    ['7', 7],
    [Buffer.from('2'), 2],
    [10_000, 10_000],
  ])('reads %p as attempt %d', (header, attempt) => {
    expect(readAttempt(delivery({ headers: { [HEADERS.attempt]: header } }))).toBe(attempt);
  });

  it.each([0, -1, 2.5, 10_001, 'first', '', true])('refuses %p as invalid-header', (header) => {
    const error = refusal(() => readAttempt(delivery({ headers: { [HEADERS.attempt]: header } })));
    expect(error).toEqual({
      reason: 'invalid-header',
      message: "invalid-header: 'rm-attempt' must be an integer from 1 to 10000",
    });
  });
});
