import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { closeConnectionsNamed } from './messaging-app';
import { TestBroker } from './test-broker';
import { createTestDatabase, type TestDatabase } from './test-database';

/** Whether a database of that name exists on the server `url` points at. */
async function databaseExists(url: string, name: string): Promise<boolean> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('test-database against the real PostgreSQL', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
  });

  afterAll(async () => {
    await database.drop();
  });

  it('creates a fresh, uniquely named database that takes queries', async () => {
    expect(database.name).toMatch(/^rm_e2e_[0-9a-f]{12}$/);
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query('CREATE TABLE orders (id int PRIMARY KEY, total numeric NOT NULL)');
      await client.query('INSERT INTO orders VALUES (1, 9.5), (2, 20)');
      const { rows } = await client.query(
        'SELECT current_database() AS name, sum(total)::text AS total FROM orders',
      );
      expect(rows).toEqual([{ name: database.name, total: '29.5' }]);
    } finally {
      await client.end();
    }
  });

  it('drops the database even while a client is still connected to it', async () => {
    const other = await createTestDatabase();
    const lingering = new Client({ connectionString: other.url });
    lingering.on('error', () => undefined);
    await lingering.connect();

    await other.drop();
    await other.drop();

    expect(await databaseExists(database.url, other.name)).toBe(false);
    await lingering.end().catch(() => undefined);
  });
});

describe('test-broker against the real RabbitMQ', () => {
  let broker: TestBroker;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });

  afterAll(async () => {
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('publishes raw messages to a queue and waits for them, properties intact', async () => {
    const queue = broker.name('orders');
    await (await broker.openChannel()).assertQueue(queue, { durable: false });

    await broker.publishRaw({ queue }, '{"orderId":1}', {
      contentType: 'application/json',
      headers: { 'x-n': 1 },
    });
    await broker.publishRaw({ queue }, Buffer.from([0xff, 0x00]), { messageId: 'not-json' });
    const messages = await broker.waitForMessages(queue, 2, 5_000);

    expect(messages.map((message) => message.content.toString('hex'))).toEqual([
      Buffer.from('{"orderId":1}').toString('hex'),
      'ff00',
    ]);
    expect(messages[0].properties.headers).toEqual({ 'x-n': 1 });
    expect(messages[1].properties.messageId).toBe('not-json');
    expect(await broker.queueDepth(queue)).toBe(0);
  });

  it('publishes through an exchange and reports the queue depth', async () => {
    const channel = await broker.openChannel();
    const exchange = broker.name('events');
    const queue = broker.name('events.audit');
    await channel.assertExchange(exchange, 'topic', { durable: false });
    await channel.assertQueue(queue, { durable: false });
    await channel.bindQueue(queue, exchange, 'order.*');

    await broker.publishRaw({ exchange, routingKey: 'order.placed' }, 'a');
    await broker.publishRaw({ exchange, routingKey: 'order.paid' }, 'b');
    await broker.publishRaw({ exchange, routingKey: 'invoice.sent' }, 'unrouted');

    expect(await broker.queueDepth(queue)).toBe(2);
    expect((await broker.getAll(queue)).map((message) => message.content.toString())).toEqual(['a', 'b']);
  });

  it('fails waitForMessages with the count it saw', async () => {
    const queue = broker.name('quiet');
    await (await broker.openChannel()).assertQueue(queue, { durable: false });
    await broker.publishRaw({ queue }, 'only one');

    await expect(broker.waitForMessages(queue, 2, 300)).rejects.toThrow(
      `Timed out after 300 ms waiting for 2 message(s) on queue ${queue} (got 1)`,
    );
  });

  it('reconnects after the broker closes its connection', async () => {
    const queue = broker.name('survivor');
    await (await broker.openChannel()).assertQueue(queue, { durable: true });

    // Its own connection only: closing every connection would break the specs running beside this one.
    expect(await closeConnectionsNamed(broker.prefix)).toBe(1);
    await broker.publishRaw({ queue }, 'after the close');

    expect(await broker.waitForMessages(queue, 1, 5_000)).toHaveLength(1);
  });

  it('deletes every queue and exchange it named or tracked, and leaves the rest to the run-wide sweep', async () => {
    const other = await TestBroker.connect();
    const channel = await other.openChannel();
    const named = other.name('named');
    const tracked = `${other.prefix}.declared-by-the-app`;
    const untracked = `${other.prefix}.left-for-the-sweep`;
    other.track(tracked);
    for (const queue of [named, tracked, untracked]) await channel.assertQueue(queue, { durable: false });
    await channel.assertExchange(other.name('exchange'), 'fanout', { durable: false });

    await other.deleteByPrefix();

    for (const queue of [named, tracked]) {
      await expect(other.queueDepth(queue)).rejects.toThrow(/NOT_FOUND/);
    }
    await expect((await other.openChannel()).checkExchange(`${other.prefix}.exchange`)).rejects.toThrow(
      /NOT_FOUND/,
    );
    expect(await other.queueDepth(untracked)).toBe(0);
    await (await other.openChannel()).deleteQueue(untracked);
    await other.close();
  });
});
