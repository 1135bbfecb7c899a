import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChannelModel } from 'amqplib';
import * as amqp from 'amqplib';
import pg from 'pg';
import { HAND_WRITTEN_TABLES, OUTBOX_INSERT } from '../bench/hand-written/hand-written-schema';
import { OutboxRelay } from '../bench/hand-written/outbox-relay';
import {
  TransactionalConsumer,
  UnusableMessageError,
  type TransactionalWork,
} from '../bench/hand-written/transactional-consumer';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

const EFFECTS = 'CREATE TABLE effects (key text NOT NULL, attempt int NOT NULL)';

/**
 * The transactional benchmark's hand-written baseline (bench/hand-written/) keeps the guarantees it is compared
 * on, against the real broker and database: a message's work commits once with its inbox row before the ack, a
 * failed attempt leaves nothing, and the relay marks only what the broker confirmed and routed, each key in order.
 */
describe('the hand-written transactional consumer and relay of the benchmarks', () => {
  let broker: TestBroker;
  let db: TestDatabase;
  let pool: pg.Pool;
  let connection: ChannelModel;
  /** The benchmarks' name prefix when set (their own runs), else this spec's. */
  let prefix: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    prefix = process.env.BENCH_NAME_PREFIX
      ? `${process.env.BENCH_NAME_PREFIX}tx-${randomBytes(3).toString('hex')}`
      : broker.prefix;
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 6 });
    for (const sql of [...HAND_WRITTEN_TABLES, EFFECTS]) await pool.query(sql);
    connection = await amqp.connect(broker.url);
    connection.on('error', () => undefined);
  });

  afterAll(async () => {
    await connection?.close().catch(() => undefined);
    await pool?.end();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  /** A queue of this spec's, remembered for cleanup. */
  async function queue(suffix: string): Promise<string> {
    const name = `${prefix}.${suffix}`;
    broker.track(name);
    await (await broker.openChannel()).assertQueue(name, { durable: true });
    return name;
  }

  function properties(key: string): amqp.Options.Publish {
    return { messageId: randomUUID(), type: 'test.event', headers: { 'rm-idempotency-key': key } };
  }

  async function consume(
    name: string,
    work: TransactionalWork,
    expected: number,
  ): Promise<{ handled: string[]; stop: () => Promise<void> }> {
    const handled: string[] = [];
    const consumer = new TransactionalConsumer({
      connection,
      pool,
      queue: name,
      consumer: name,
      prefetch: 4,
      work,
      handled: (message, duplicate) =>
        handled.push(`${message.idempotencyKey}${duplicate ? ' (duplicate)' : ''}`),
    });
    await consumer.start();
    await waitFor(`${expected} message(s) handled`, () => handled.length >= expected, { timeoutMs: 15_000 });
    return { handled, stop: () => consumer.stop() };
  }

  it('two copies of one message: the work commits once, both are acknowledged', async () => {
    const name = await queue('duplicate');
    const copy = properties('order-1');
    await broker.publishRaw({ queue: name }, '{"n":1}', copy);
    await broker.publishRaw({ queue: name }, '{"n":1}', { ...copy, messageId: randomUUID() });

    const run = await consume(
      name,
      async (client, message) => {
        await client.query('INSERT INTO effects (key, attempt) VALUES ($1, 1)', [message.idempotencyKey]);
      },
      2,
    );
    await run.stop();

    expect(run.handled.sort()).toEqual(['order-1', 'order-1 (duplicate)']);
    const { rows } = await pool.query('SELECT key FROM effects WHERE key = $1', ['order-1']);
    expect(rows).toHaveLength(1);
    expect(await broker.checkQueue(name)).toMatchObject({ messageCount: 0 });
  });

  it('a failed attempt rolls back its inbox row and its work, and the requeued message is handled once', async () => {
    const name = await queue('failure');
    await broker.publishRaw({ queue: name }, '{"n":2}', properties('order-2'));
    let attempts = 0;

    const run = await consume(
      name,
      async (client, message) => {
        attempts++;
        await client.query('INSERT INTO effects (key, attempt) VALUES ($1, $2)', [
          message.idempotencyKey,
          attempts,
        ]);
        if (attempts === 1) throw new Error('the first attempt fails after its write');
      },
      1,
    );
    await run.stop();

    expect(attempts).toBe(2);
    const effects = await pool.query('SELECT attempt FROM effects WHERE key = $1', ['order-2']);
    expect(effects.rows).toEqual([{ attempt: 2 }]);
    const inbox = await pool.query('SELECT count(*)::int AS n FROM hw_inbox WHERE idempotency_key = $1', [
      'order-2',
    ]);
    expect(inbox.rows).toEqual([{ n: 1 }]);
  });

  it('a delivery without an idempotency key is rejected, not handled', async () => {
    const name = await queue('undecodable');
    await broker.publishRaw({ queue: name }, '{"n":3}', { messageId: randomUUID(), type: 'test.event' });
    await broker.publishRaw({ queue: name }, '{"n":4}', properties('order-4'));

    const run = await consume(name, async () => undefined, 1);
    await run.stop();

    expect(run.handled).toEqual(['order-4']);
    expect(await broker.checkQueue(name)).toMatchObject({ messageCount: 0 });
  });

  it('a message its work finds unusable is rejected once, its writes rolled back, and the next one handled', async () => {
    const name = await queue('unusable');
    await broker.publishRaw({ queue: name }, '{"n":5}', properties('order-5'));
    await broker.publishRaw({ queue: name }, '{"n":6}', properties('order-6'));
    const attempts: string[] = [];

    const run = await consume(
      name,
      async (client, message) => {
        attempts.push(message.idempotencyKey);
        await client.query('INSERT INTO effects (key, attempt) VALUES ($1, 1)', [message.idempotencyKey]);
        if (message.body.n === 5) throw new UnusableMessageError('n must not be 5');
      },
      1,
    );
    await run.stop();

    // Both are in flight at once (prefetch 4): either may start first.
    expect({ handled: run.handled, attempts: attempts.sort() }).toEqual({
      handled: ['order-6'],
      attempts: ['order-5', 'order-6'],
    });
    const effects = await pool.query(`SELECT key FROM effects WHERE key IN ('order-5', 'order-6')`);
    expect(effects.rows).toEqual([{ key: 'order-6' }]);
    expect(await broker.checkQueue(name)).toMatchObject({ messageCount: 0 });
  });

  /** Writes `count` outbox rows in one transaction; row n has key `key-<n mod keys>`, or none with 0 keys. */
  async function writeRows(exchange: string, routingKey: string, count: number, keys: number): Promise<void> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      for (let n = 0; n < count; n++) {
        const props = { ...properties(`row-${n}`), persistent: true };
        await client.query(OUTBOX_INSERT, [
          props.messageId,
          exchange,
          routingKey,
          JSON.stringify(props),
          Buffer.from(JSON.stringify({ n })),
          keys > 0 ? `key-${n % keys}` : null,
        ]);
      }
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  }

  it('the relay publishes every row, each ordering key in order, and marks them all published', async () => {
    const exchange = `${prefix}.relay`;
    broker.track(exchange);
    const sink = await queue('relay-sink');
    const channel = await broker.openChannel();
    await channel.assertExchange(exchange, 'topic', { durable: false });
    await channel.bindQueue(sink, exchange, 'test.event');
    await pool.query('TRUNCATE hw_outbox');
    await writeRows(exchange, 'test.event', 300, 7);
    const relay = new OutboxRelay({ pool, connection, batchSize: 40, workers: 2, pollMs: 50 });
    relay.start();

    const messages = await broker.waitForMessages(sink, 300, 15_000);
    await waitFor('every row marked', () => relay.published >= 300, { timeoutMs: 5_000 });
    await relay.stop();

    const numbers = messages.map((message) => (JSON.parse(message.content.toString()) as { n: number }).n);
    expect(new Set(numbers).size).toBe(300);
    for (let key = 0; key < 7; key++) {
      const ofKey = numbers.filter((n) => n % 7 === key);
      expect(ofKey).toEqual([...ofKey].sort((a, b) => a - b));
    }
    const pending = await pool.query(`SELECT count(*)::int AS n FROM hw_outbox WHERE status <> 'published'`);
    expect(pending.rows).toEqual([{ n: 0 }]);
  });

  it('an unroutable row is returned by the broker and stays pending, not marked', async () => {
    const exchange = `${prefix}.nowhere`;
    broker.track(exchange);
    await (await broker.openChannel()).assertExchange(exchange, 'topic', { durable: false });
    await pool.query('TRUNCATE hw_outbox');
    await writeRows(exchange, 'no.binding', 3, 0);
    const relay = new OutboxRelay({ pool, connection, batchSize: 10, workers: 1, pollMs: 50 });
    relay.start();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await relay.stop();

    expect(relay.published).toBe(0);
    const pending = await pool.query(`SELECT count(*)::int AS n FROM hw_outbox WHERE status = 'pending'`);
    expect(pending.rows).toEqual([{ n: 3 }]);
  });
});
