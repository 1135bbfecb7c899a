import { describe, expect, it } from '@jest/globals';
import type { ConsumeMessage } from 'amqplib';
import { InMemoryBroker } from './in-memory-broker';
import type { InMemoryChannel } from './in-memory-channel';
import { IN_MEMORY_BROKER_VERSION, InMemoryConnection } from './in-memory-connection';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

async function consumeInto(channel: InMemoryChannel, queue: string): Promise<ConsumeMessage[]> {
  const received: ConsumeMessage[] = [];
  await channel.consume(queue, (message) => message && received.push(message));
  return received;
}

describe('InMemoryConnection', () => {
  it('delivers within the prefetch, and the next one once a delivery is acknowledged', async () => {
    const connection = new InMemoryConnection(new InMemoryBroker());
    const channel = await connection.createChannel();
    await channel.assertQueue('q');
    await channel.prefetch(2);
    for (const n of [1, 2, 3]) channel.publish('', 'q', Buffer.from(String(n)));
    const received = await consumeInto(channel, 'q');
    await tick();
    expect(received.map((m) => m.content.toString())).toEqual(['1', '2']);

    channel.ack(received[0]);
    await tick();
    expect(received.map((m) => m.content.toString())).toEqual(['1', '2', '3']);
    expect(connection.connection.serverProperties.version).toBe(IN_MEMORY_BROKER_VERSION);
  });

  it('redelivers a nacked message and everything a closed channel held, flagged as redelivered', async () => {
    const connection = new InMemoryConnection(new InMemoryBroker());
    const first = await connection.createChannel();
    await first.assertQueue('q');
    first.publish('', 'q', Buffer.from('a'));
    first.publish('', 'q', Buffer.from('b'));
    const received = await consumeInto(first, 'q');
    await tick();
    first.nack(received[0], false, true);
    await tick();
    expect(received.map((m) => [m.content.toString(), m.fields.redelivered])).toEqual([
      ['a', false],
      ['b', false],
      ['a', true],
    ]);

    await first.close();
    const second = await connection.createChannel();
    const again = await consumeInto(second, 'q');
    await tick();
    expect(again.map((m) => [m.content.toString(), m.fields.redelivered]).sort()).toEqual([
      ['a', true],
      ['b', true],
    ]);
  });

  it('closes the channel on an unknown delivery tag or a refused declaration, as RabbitMQ does', async () => {
    const connection = new InMemoryConnection(new InMemoryBroker());
    const channel = await connection.createChannel();
    const events: string[] = [];
    channel.on('error', (error: Error) => events.push(`error: ${error.message}`));
    channel.on('close', () => events.push('close'));
    channel.ack({ fields: { deliveryTag: 42 } });
    await tick();
    expect(events).toEqual([
      'error: Operation failed: PRECONDITION_FAILED - unknown delivery tag 42',
      'close',
    ]);
    await expect(channel.assertQueue('q')).rejects.toThrow('Channel closed');

    const other = await connection.createChannel();
    // As with amqplib, a channel error with no 'error' listener is thrown.
    other.on('error', () => undefined);
    await other.assertQueue('q', { arguments: { 'x-queue-type': 'quorum' } });
    await expect(other.assertQueue('q', { arguments: { 'x-queue-type': 'classic' } })).rejects.toThrow(
      /inequivalent arg 'x-queue-type'/,
    );
  });

  it('confirms each publish on a confirm channel, and returns a mandatory message no queue took', async () => {
    const connection = new InMemoryConnection(new InMemoryBroker());
    const channel = await connection.createConfirmChannel();
    await channel.assertExchange('events', 'topic');
    const returned: string[] = [];
    channel.on('return', (message: ConsumeMessage) => returned.push(message.fields.routingKey));
    const confirmed = await new Promise<unknown>((resolve) =>
      channel.publish('events', 'order.placed', Buffer.from('{}'), { mandatory: true }, resolve),
    );
    expect(confirmed).toBeNull();
    expect(returned).toEqual(['order.placed']);
  });

  it('closes every channel when the broker drops the connection, with error before close', async () => {
    const connection = new InMemoryConnection(new InMemoryBroker());
    const channel = await connection.createChannel();
    const events: string[] = [];
    connection.on('error', () => events.push('connection error'));
    connection.on('close', () => events.push('connection close'));
    channel.on('close', () => events.push('channel close'));
    connection.drop();
    await tick();
    expect(events).toEqual(['channel close', 'connection error', 'connection close']);
    await expect(connection.createChannel()).rejects.toThrow('Connection closed');
  });

  describe('direct reply-to', () => {
    it('routes a reply to the channel that sent the request, by the reply name its replyTo became', async () => {
      const connection = new InMemoryConnection(new InMemoryBroker());
      const caller = await connection.createConfirmChannel();
      const responder = await connection.createChannel();
      await responder.assertQueue('quotes');
      const replies: ConsumeMessage[] = [];
      await caller.consume('amq.rabbitmq.reply-to', (m) => m && replies.push(m), { noAck: true });
      caller.publish('', 'quotes', Buffer.from('quote?'), {
        replyTo: 'amq.rabbitmq.reply-to',
        messageId: 'r-1',
      });
      const requests = await consumeInto(responder, 'quotes');
      await tick();
      const [request] = requests;

      expect(request.properties.replyTo).toMatch(/^amq\.rabbitmq\.reply-to\.\d+$/);
      responder.publish('', request.properties.replyTo as string, Buffer.from('750'), {
        correlationId: 'r-1',
      });
      await tick();

      expect(replies.map((m) => [m.content.toString(), m.properties.correlationId as string])).toEqual([
        ['750', 'r-1'],
      ]);
    });

    it('drops a reply once the caller closed its channel, returning it when mandatory', async () => {
      const connection = new InMemoryConnection(new InMemoryBroker());
      const caller = await connection.createChannel();
      const responder = await connection.createChannel();
      await responder.assertQueue('quotes');
      await caller.consume('amq.rabbitmq.reply-to', () => undefined, { noAck: true });
      caller.publish('', 'quotes', Buffer.from('quote?'), { replyTo: 'amq.rabbitmq.reply-to' });
      const requests = await consumeInto(responder, 'quotes');
      await tick();
      const [request] = requests;
      await caller.close();
      const returned: unknown[] = [];
      responder.on('return', (m) => returned.push(m));

      responder.publish('', request.properties.replyTo as string, Buffer.from('late'), { mandatory: true });
      await tick();

      expect(returned).toHaveLength(1);
    });

    it.each([
      [
        'a request with replyTo from a channel that consumes no replies',
        async (channel: InMemoryChannel) => {
          channel.publish('', 'q', Buffer.from('x'), { replyTo: 'amq.rabbitmq.reply-to' });
        },
        'fast reply consumer does not exist',
      ],
      [
        'a reply consumer that would acknowledge',
        (channel: InMemoryChannel) => channel.consume('amq.rabbitmq.reply-to', () => undefined),
        'reply consumer cannot acknowledge',
      ],
    ])('closes the channel with PRECONDITION_FAILED on %s, as RabbitMQ does', async (_case, act, reason) => {
      const channel = await new InMemoryConnection(new InMemoryBroker()).createChannel();
      const errors: Error[] = [];
      channel.on('error', (error: Error) => errors.push(error));
      const closed = new Promise<void>((resolve) => channel.once('close', resolve));

      await Promise.resolve(act(channel)).catch(() => undefined);
      await closed;

      expect(errors.map((e) => e.message)).toEqual([expect.stringContaining(reason)]);
    });
  });
});
