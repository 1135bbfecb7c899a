import { describe, expect, it } from '@jest/globals';
import type { MessageProperties } from 'amqplib';
import { AmqpError, InMemoryBroker, type QueueConsumer, type StoredMessage } from './in-memory-broker';
import { topicMatches } from './routing';

const properties = (extra: Partial<MessageProperties> = {}) =>
  ({ headers: {}, ...extra }) as MessageProperties;

/** A consumer that takes up to `room` deliveries and keeps them. */
function consumer(tag: string, room = Infinity) {
  const held: Array<{ queue: string; message: StoredMessage }> = [];
  const entry: QueueConsumer & { held: typeof held } = {
    tag,
    held,
    hasRoom: () => held.length < room,
    deliver: (queue, message) => held.push({ queue, message }),
    cancelled: () => undefined,
  };
  return entry;
}

const body = (message: StoredMessage) => message.content.toString();

describe('topicMatches', () => {
  it.each([
    ['order.placed', 'order.placed', true],
    ['order.*', 'order.placed', true],
    ['order.*', 'order.placed.eu', false],
    ['order.#', 'order', true],
    ['order.#', 'order.placed.eu', true],
    ['#', '', true],
    ['*.*.1.#', '0.0.1', true],
    ['*.*.1.#', '0.0.0.1', false],
    ['#.paid', 'order.eu.paid', true],
  ])('%s matches %s: %s', (pattern, key, expected) => {
    expect(topicMatches(pattern, key)).toBe(expected);
  });
});

describe('InMemoryBroker', () => {
  it('routes through topic, headers and exchange-to-exchange bindings, and refuses an unknown exchange', () => {
    const broker = new InMemoryBroker();
    broker.assertExchange('events', 'topic');
    broker.assertExchange('deliver', 'headers');
    broker.assertExchange('audit', 'fanout');
    broker.assertQueue('billing');
    broker.assertQueue('shipping');
    broker.assertQueue('audit');
    broker.bind('events', 'billing', 'order.*', {}, false);
    broker.bind('deliver', 'shipping', '', { 'rm-retry-queue': 'shipping' }, false);
    broker.bind('events', 'audit', '#', {}, true);
    broker.bind('audit', 'audit', '', {}, false);

    expect(broker.publish('events', 'order.placed', Buffer.from('a'), properties()).sort()).toEqual([
      'audit',
      'billing',
    ]);
    expect(
      broker.publish(
        'deliver',
        'x',
        Buffer.from('b'),
        properties({ headers: { 'rm-retry-queue': 'shipping' } }),
      ),
    ).toEqual(['shipping']);
    expect(broker.publish('deliver', 'x', Buffer.from('c'), properties({ headers: { other: 1 } }))).toEqual(
      [],
    );
    expect(() => broker.publish('nowhere', 'x', Buffer.from('d'), properties())).toThrow(AmqpError);
  });

  it('refuses a queue declared again with other arguments, and an exchange with another type', () => {
    const broker = new InMemoryBroker();
    broker.assertQueue('billing', { 'x-queue-type': 'quorum' });
    broker.assertQueue('billing', { 'x-queue-type': 'quorum' });
    expect(() => broker.assertQueue('billing', { 'x-queue-type': 'classic' })).toThrow(
      /PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'billing'/,
    );
    broker.assertExchange('events', 'topic');
    expect(() => broker.assertExchange('events', 'direct')).toThrow(/inequivalent arg 'type'/);
  });

  it('expires messages when the virtual clock passes their TTL and dead-letters them with x-death', () => {
    const broker = new InMemoryBroker();
    broker.assertExchange('dlx', 'direct');
    broker.assertQueue('retry', { 'x-message-ttl': 1000, 'x-dead-letter-exchange': 'dlx' });
    broker.assertQueue('back', {});
    broker.bind('dlx', 'back', 'retry', {}, false);
    broker.publish('', 'retry', Buffer.from('first'), properties());
    broker.advance(500);
    broker.publish('', 'retry', Buffer.from('second'), properties());

    broker.advance(499);
    expect(broker.checkQueue('back').messageCount).toBe(0);
    broker.advance(1);
    expect(broker.checkQueue('back').messageCount).toBe(1);
    broker.advance(500);
    const back = [broker.take('back'), broker.take('back')] as StoredMessage[];
    expect(back.map(body)).toEqual(['first', 'second']);
    expect(back[0].properties.headers).toMatchObject({
      'x-death': [{ count: 1, reason: 'expired', queue: 'retry', exchange: '', 'routing-keys': ['retry'] }],
      'x-first-death-reason': 'expired',
    });
  });

  it('counts redeliveries on a quorum queue and dead-letters past its delivery limit', () => {
    const broker = new InMemoryBroker();
    broker.assertExchange('dlx', 'direct');
    broker.assertQueue('q', {
      'x-queue-type': 'quorum',
      'x-delivery-limit': 1,
      'x-dead-letter-exchange': 'dlx',
    });
    broker.assertQueue('q.dlq');
    broker.bind('dlx', 'q.dlq', 'q', {}, false);
    broker.publish('', 'q', Buffer.from('m'), properties());

    const first = broker.take('q') as StoredMessage;
    broker.requeue('q', first);
    const second = broker.take('q') as StoredMessage;
    expect(second.redelivered).toBe(true);
    expect(second.deliveryCount).toBe(1);
    broker.requeue('q', second);

    expect(broker.checkQueue('q').messageCount).toBe(0);
    const dead = broker.take('q.dlq') as StoredMessage;
    expect(dead.properties.headers?.['x-death']).toMatchObject([{ reason: 'delivery_limit', queue: 'q' }]);
  });

  it('hands deliveries round robin within each consumer prefetch, and only to the first on a single-active-consumer queue', () => {
    const broker = new InMemoryBroker();
    broker.assertQueue('shared');
    broker.assertQueue('single', { 'x-single-active-consumer': true });
    const a = consumer('a', 2);
    const b = consumer('b', 2);
    broker.addConsumer('shared', a);
    broker.addConsumer('shared', b);
    for (const n of [1, 2, 3, 4, 5]) broker.publish('', 'shared', Buffer.from(String(n)), properties());
    expect(a.held.map((h) => body(h.message))).toEqual(['1', '3']);
    expect(b.held.map((h) => body(h.message))).toEqual(['2', '4']);
    expect(broker.checkQueue('shared').messageCount).toBe(1);

    const first = consumer('first');
    const second = consumer('second');
    broker.addConsumer('single', first);
    broker.addConsumer('single', second);
    for (const n of [1, 2]) broker.publish('', 'single', Buffer.from(String(n)), properties());
    expect(first.held).toHaveLength(2);
    expect(second.held).toHaveLength(0);
    broker.removeConsumer('first');
    broker.publish('', 'single', Buffer.from('3'), properties());
    expect(second.held.map((h) => body(h.message))).toEqual(['3']);
  });
});
