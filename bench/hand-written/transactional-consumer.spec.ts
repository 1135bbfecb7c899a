import { describe, expect, it } from '@jest/globals';
import { decode } from './transactional-consumer';

const delivery = (
  body: string,
  properties: {
    headers?: Record<string, unknown>;
    messageId?: unknown;
    correlationId?: unknown;
    type?: unknown;
  },
): Parameters<typeof decode>[0] =>
  ({ content: Buffer.from(body), properties }) as unknown as Parameters<typeof decode>[0];

const GOOD = { headers: { 'rm-idempotency-key': 'order-1' }, messageId: 'm-1', type: 'bench.order-placed' };

describe('the hand-written consumer: what it takes from a delivery before its transaction', () => {
  it('a well-formed delivery gives its key, ids and body', () => {
    expect(decode(delivery('{"orderId":"order-1"}', GOOD))).toEqual({
      idempotencyKey: 'order-1',
      messageId: 'm-1',
      correlationId: 'm-1',
      type: 'bench.order-placed',
      body: { orderId: 'order-1' },
    });
  });

  it('a delivery with a correlation id carries it on', () => {
    expect(decode(delivery('{}', { ...GOOD, correlationId: 'c-1' }))).toMatchObject({ correlationId: 'c-1' });
  });

  it.each([
    ['no idempotency key', '{}', { ...GOOD, headers: {} }],
    ['an empty idempotency key', '{}', { ...GOOD, headers: { 'rm-idempotency-key': '' } }],
    ['an idempotency key that is not a string', '{}', { ...GOOD, headers: { 'rm-idempotency-key': 7 } }],
    [
      'an idempotency key over 200 characters',
      '{}',
      { ...GOOD, headers: { 'rm-idempotency-key': 'k'.repeat(201) } },
    ],
    ['no message id', '{}', { ...GOOD, messageId: undefined }],
    ['no type', '{}', { ...GOOD, type: undefined }],
    ['a body that is not JSON', '{not json', GOOD],
    ['a JSON body that is not an object', '[1,2]', GOOD],
    ['a null body', 'null', GOOD],
  ])('%s: refused (undefined)', (_scenario, body, properties) => {
    expect(decode(delivery(body, properties))).toBeUndefined();
  });
});
