import { describe, expect, it } from '@jest/globals';
import { HEADERS } from 'nestjs-reliable-messaging';
import { readDeadLetter, DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { replayMessage } from './replay-message';

const properties = {
  messageId: 'm-1',
  type: 'order.placed',
  contentType: 'application/json',
  contentEncoding: 'utf-8',
  correlationId: 'c-1',
  appId: 'shop',
  timestamp: 1_777_000_000,
};

describe('readDeadLetter and replayMessage', () => {
  it('replays to the original queue through the default exchange, keeping ids and history, resetting attempts', () => {
    const message = {
      content: Buffer.from('{"orderId":"o-1"}'),
      properties: {
        ...properties,
        headers: {
          [HEADERS.idempotencyKey]: 'order-placed:o-1',
          [HEADERS.attempt]: 6,
          [HEADERS.redeliveries]: 2,
          [HEADERS.originalExchange]: 'stale',
          'x-custom': 'kept',
          'x-death': [{ queue: 'events.retry.03', reason: 'expired', count: 1 }],
          [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
          [DEAD_LETTER_HEADERS.errorClass]: 'Timeout',
          [DEAD_LETTER_HEADERS.errorStack]: 'Timeout: slow\n    at x',
          [DEAD_LETTER_HEADERS.queue]: 'billing',
          [DEAD_LETTER_HEADERS.exchange]: 'events',
          [DEAD_LETTER_HEADERS.routingKey]: 'order.placed',
          [DEAD_LETTER_HEADERS.attempts]: 6,
          [DEAD_LETTER_HEADERS.count]: 2,
          [DEAD_LETTER_HEADERS.firstFailureAt]: '2026-05-01T10:00:00.000Z',
          [DEAD_LETTER_HEADERS.lastFailureAt]: '2026-05-01T11:00:00.000Z',
        },
      },
    };
    const deadLetter = readDeadLetter(message as never, 'billing.dlq');
    expect(deadLetter).toMatchObject({
      queue: 'billing',
      reason: 'attempts-exhausted',
      attempts: 6,
      deadLetterCount: 2,
      idempotencyKey: 'order-placed:o-1',
      firstFailureAt: new Date('2026-05-01T10:00:00.000Z'),
      deadLetteredAt: new Date('2026-05-01T11:00:00.000Z'),
    });

    const replay = replayMessage(deadLetter, new Date('2026-05-02T00:00:00.000Z'));

    expect(replay).toMatchObject({ exchange: '', routingKey: 'billing', body: message.content });
    expect(replay.properties).toMatchObject(properties);
    expect(replay.properties.headers).toEqual({
      [HEADERS.idempotencyKey]: 'order-placed:o-1',
      [HEADERS.originalExchange]: 'events',
      [HEADERS.originalRoutingKey]: 'order.placed',
      'x-custom': 'kept',
      [DEAD_LETTER_HEADERS.count]: 2,
      [DEAD_LETTER_HEADERS.firstFailureAt]: '2026-05-01T10:00:00.000Z',
      [DEAD_LETTER_HEADERS.replayedAt]: '2026-05-02T00:00:00.000Z',
    });
  });

  it('reads a message the broker dead-lettered itself (delivery-limit backstop) from its x-death record', () => {
    const deadLetter = readDeadLetter(
      {
        content: Buffer.from('{}'),
        properties: {
          ...properties,
          headers: {
            'x-death': [
              {
                queue: 'billing',
                reason: 'delivery_limit',
                exchange: 'events',
                'routing-keys': ['order.placed'],
                count: 1,
                time: { '!': 'timestamp', value: 1_777_000_100 },
              },
            ],
          },
        },
      } as never,
      'billing.dlq',
    );
    expect(deadLetter).toMatchObject({
      queue: 'billing',
      reason: 'delivery_limit',
      exchange: 'events',
      routingKey: 'order.placed',
      deadLetterCount: 1,
      deadLetteredAt: new Date(1_777_000_100_000),
    });
    expect(replayMessage(deadLetter, new Date()).properties.headers['x-death']).toBeUndefined();
  });

  it.each([
    ['a replay keeps', undefined, true],
    ['an edited replay drops', Buffer.from('{"orderId":"o-1","note":"edited"}'), false],
  ])("%s a claim check's reference, size and digest", (_case, body, kept) => {
    const claimCheck = {
      [HEADERS.claimCheck]: 'postgres:01890000-0000-7000-8000-000000000000',
      [HEADERS.claimCheckBytes]: 12,
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
      [HEADERS.claimCheckField]: 'note',
    };
    const deadLetter = readDeadLetter(
      {
        content: Buffer.from('{"orderId":"o-1"}'),
        properties: {
          ...properties,
          headers: { ...claimCheck, [DEAD_LETTER_HEADERS.queue]: 'billing', [DEAD_LETTER_HEADERS.count]: 1 },
        },
      } as never,
      'billing.dlq',
    );
    const headers = replayMessage(deadLetter, new Date(), body).properties.headers;
    for (const [name, value] of Object.entries(claimCheck)) {
      expect(headers[name]).toEqual(kept ? value : undefined);
    }
  });

  it.each([
    ['a forged rm-dead-letter-queue header', { [DEAD_LETTER_HEADERS.queue]: 'billing.commands' }],
    ['a forged x-death record', { 'x-death': [{ queue: 'billing.commands', reason: 'expired', count: 1 }] }],
    [
      'both, with a forged exchange and routing key',
      {
        [DEAD_LETTER_HEADERS.queue]: 'billing.commands',
        [DEAD_LETTER_HEADERS.exchange]: '',
        [DEAD_LETTER_HEADERS.routingKey]: 'billing.commands',
        'x-death': [{ queue: 'billing.commands', reason: 'expired', count: 1 }],
      },
    ],
  ])('replays to the queue of the dead-letter queue it sits in, whatever %s says', (_case, headers) => {
    const deadLetter = readDeadLetter(
      { content: Buffer.from('{"amount":1000000}'), properties: { ...properties, headers } } as never,
      'orders.dlq',
    );
    expect(deadLetter.queue).toBe('orders');

    const replay = replayMessage(deadLetter, new Date());

    expect(replay).toMatchObject({ exchange: '', routingKey: 'orders' });
    // Even a DeadLetter whose queue was changed after reading routes by the queue it was read from.
    expect(replayMessage({ ...deadLetter, queue: 'billing.commands' }, new Date()).routingKey).toBe('orders');
  });

  it('shows a header naming another queue as a claim, and none when it agrees', () => {
    const read = (queue: string) =>
      readDeadLetter(
        {
          content: Buffer.from('{}'),
          properties: { ...properties, headers: { [DEAD_LETTER_HEADERS.queue]: queue } },
        } as never,
        'orders.dlq',
      );
    expect(read('billing.commands')).toMatchObject({ queue: 'orders', claimedQueue: 'billing.commands' });
    expect(read('orders').claimedQueue).toBeUndefined();
  });

  it("points a plain replay's claim check at the replayed message's own copy, never at the dead letter's", () => {
    const deadLetter = readDeadLetter(
      {
        content: Buffer.alloc(0),
        properties: {
          ...properties,
          headers: {
            [HEADERS.claimCheck]: 'postgres:01890000-0000-7000-8000-000000000001',
            [DEAD_LETTER_HEADERS.claimCheckCopy]: 'postgres:01890000-0000-7000-8000-000000000001',
          },
        },
      } as never,
      'documents.dlq',
    );
    const fresh = 'postgres:01890000-0000-7000-8000-000000000002';

    const headers = replayMessage(deadLetter, new Date(), undefined, fresh).properties.headers;

    expect(headers[HEADERS.claimCheck]).toBe(fresh);
    expect(headers[DEAD_LETTER_HEADERS.claimCheckCopy]).toBeUndefined();
  });

  it('falls back to the dead-letter queue name for a message with no record of its queue', () => {
    expect(
      readDeadLetter({ content: Buffer.from('x'), properties: { headers: {} } } as never, 'billing.dlq'),
    ).toMatchObject({
      queue: 'billing',
      reason: 'unknown',
      deadLetterCount: 0,
    });
  });

  it.each([
    ['a plain replay keeps the reference to its copy', undefined, true],
    ['an edited replay drops the claim check', Buffer.from('{"id":"d-1","text":"edited"}'), false],
  ])("drops the dead letter's claim-check copy mark: %s", (_case, body, keepsReference) => {
    const copy = 'postgres:01890000-0000-7000-8000-000000000001';
    const claimCheck = {
      [HEADERS.claimCheck]: copy,
      [HEADERS.claimCheckBytes]: 20,
      [HEADERS.claimCheckSha256]: 'a'.repeat(64),
    };
    const message = {
      content: Buffer.alloc(0),
      properties: {
        ...properties,
        headers: {
          ...claimCheck,
          [DEAD_LETTER_HEADERS.queue]: 'documents',
          [DEAD_LETTER_HEADERS.claimCheckCopy]: copy,
        },
      },
    };

    const replay = replayMessage(readDeadLetter(message as never, 'documents.dlq'), new Date(), body);

    expect(replay.properties.headers[DEAD_LETTER_HEADERS.claimCheckCopy]).toBeUndefined();
    if (keepsReference) expect(replay.properties.headers).toMatchObject(claimCheck);
    else expect(replay.properties.headers[HEADERS.claimCheck]).toBeUndefined();
  });
});
