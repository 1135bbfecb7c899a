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
});
