import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import type { EntityManager } from 'typeorm';
import {
  MessagePublisher,
  ReliableMessagingModule,
  type QueueType,
  type ReliableMessagingModuleOptions,
} from 'nestjs-reliable-messaging';
import { OutboxRelay } from 'nestjs-reliable-messaging/operations';
import { benchMessage, rawEnvelope } from './bench-message';
import { createBenchDatabase, type BenchDatabase } from './bench-database';
import { pgbenchFloor } from './pgbench-floor';
import {
  alternate,
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  rawConnection,
  ROUNDS,
  startRun,
  uniquePrefix,
  type Comparison,
  type LatencyComparison,
  type Measurement,
  type Suite,
} from './harness';

/** Business transactions per write-cost run: `BENCH_TRANSACTIONS`, else a quarter of BENCH_MESSAGES. */
const TRANSACTIONS = Number(process.env.BENCH_TRANSACTIONS ?? Math.max(1000, Math.floor(MESSAGES / 4)));
/** Transactions in flight at once in the write-cost throughput runs, as concurrent requests of an app. */
const CONCURRENT_TRANSACTIONS = 8;
/** The relay's batch size, and the raw baseline's publish window. */
const BATCH = 200;
/** The relay's rounds at once: `BENCH_RELAY_CONCURRENCY`, else the module's default. */
const RELAY_CONCURRENCY = Number(process.env.BENCH_RELAY_CONCURRENCY ?? 2);
/** The offered load and duration of the latency runs. */
const LATENCY_RATE = 1000;
const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 5);
/** The parts of the suite to run: `BENCH_OUTBOX_PARTS=write,floor,relay,latency` picks some; all by default. */
const PARTS = new Set(
  (process.env.BENCH_OUTBOX_PARTS ?? 'write,floor,relay,latency').split(',').map((part) => part.trim()),
);

const SHOP_TABLES = [
  'CREATE TABLE customers (id int PRIMARY KEY, order_count int NOT NULL DEFAULT 0)',
  'CREATE TABLE orders (id text PRIMARY KEY, customer_id int NOT NULL, total_cents int NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
  'CREATE TABLE order_items (order_id text NOT NULL, line int NOT NULL, sku text NOT NULL, quantity int NOT NULL, unit_price_cents int NOT NULL, PRIMARY KEY (order_id, line))',
  'INSERT INTO customers (id) SELECT generate_series(0, 96)',
];

/** The business transaction of the write-cost runs: an order with three lines, and its customer's counter. */
async function placeOrder(manager: EntityManager, n: number): Promise<void> {
  const id = `order-${n}`;
  await manager.query('INSERT INTO orders (id, customer_id, total_cents, status) VALUES ($1, $2, $3, $4)', [
    id,
    n % 97,
    3000 + n,
    'placed',
  ]);
  for (let line = 1; line <= 3; line++) {
    await manager.query(
      'INSERT INTO order_items (order_id, line, sku, quantity, unit_price_cents) VALUES ($1, $2, $3, $4, $5)',
      [id, line, `sku-${(n + line) % 500}`, line, 1000],
    );
  }
  await manager.query('UPDATE customers SET order_count = order_count + 1 WHERE id = $1', [n % 97]);
}

/** The smallest business transaction: one row. */
async function insertOrder(manager: EntityManager, n: number): Promise<void> {
  await manager.query('INSERT INTO orders (id, customer_id, total_cents, status) VALUES ($1, $2, $3, $4)', [
    `order-${n}`,
    n % 97,
    3000 + n,
    'placed',
  ]);
}

/** Runs `transaction(n)` for n in 0..count-1, `concurrency` at a time; resolves with the elapsed time. */
async function concurrently(
  count: number,
  concurrency: number,
  work: (n: number) => Promise<void>,
): Promise<Measurement> {
  let next = 0;
  const end = startRun(count);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
  return end();
}

/** Boots an app of the messaging module alone with `options`. */
export async function bootApp(options: ReliableMessagingModuleOptions): Promise<INestApplicationContext> {
  @Module({ imports: [ReliableMessagingModule.forRoot(options)] })
  class BenchOutboxModule {}
  return NestFactory.createApplicationContext(BenchOutboxModule, { logger: ['error', 'warn'] });
}

/** A business transaction with and without its outbox row (the relay off, so only the write is measured). */
async function writeCost(db: BenchDatabase, prefix: string): Promise<Comparison[]> {
  const dataSource = await db.connect(CONCURRENT_TRANSACTIONS + 2);
  const app = await bootApp({
    urls: AMQP_URL,
    exchange: `${prefix}.events`,
    connectionName: `${prefix}.writer`,
    dataSource,
    outbox: { relay: false },
  });
  try {
    const publisher = app.get(MessagePublisher);
    const reset = (): Promise<unknown> => dataSource.query('TRUNCATE orders, order_items, rm_outbox');
    const comparisons: Comparison[] = [];
    const ORDER = 'order with 3 lines and a customer update (6 statements)';
    const byModule: RowWriter = (manager, n) => publisher.publish(benchMessage(n), { manager });
    // A transaction with three messages: their rows go in with one statement.
    const threeByModule: RowWriter = (manager, n) =>
      publisher.publishAll([benchMessage(3 * n), benchMessage(3 * n + 1), benchMessage(3 * n + 2)], {
        manager,
      });
    // The floor of any outbox: the same row built and inserted by hand through the same manager, no module.
    const byHand: RowWriter = (manager, n) => insertRowByHand(manager, prefix, n);
    const ROW = { writes: 'the outbox row', target: 1 / 1.15 };
    for (const { scenario, business, clients, writeRow, writes, target } of [
      { scenario: ORDER, business: placeOrder, clients: 1, writeRow: byModule, ...ROW },
      { scenario: ORDER, business: placeOrder, clients: CONCURRENT_TRANSACTIONS, writeRow: byModule, ...ROW },
      {
        scenario: 'single-row insert (the worst case)',
        business: insertOrder,
        clients: CONCURRENT_TRANSACTIONS,
        writeRow: byModule,
        ...ROW,
      },
      {
        scenario: ORDER,
        business: placeOrder,
        clients: CONCURRENT_TRANSACTIONS,
        writeRow: byHand,
        writes: 'the same row inserted by hand, no module (the floor)',
        target: 0,
      },
      {
        scenario: ORDER,
        business: placeOrder,
        clients: CONCURRENT_TRANSACTIONS,
        writeRow: threeByModule,
        writes: 'three outbox rows from one publishAll()',
        target: 0,
      },
    ]) {
      const count = clients === 1 ? Math.ceil(TRANSACTIONS / 4) : TRANSACTIONS;
      const runs = await alternate(
        ROUNDS,
        async () => {
          await reset();
          return concurrently(count, clients, (n) =>
            dataSource.transaction((manager) => business(manager, n)),
          );
        },
        async () => {
          await reset();
          return concurrently(count, clients, (n) =>
            dataSource.transaction(async (manager) => {
              await business(manager, n);
              await writeRow(manager, n);
            }),
          );
        },
      );
      const load = clients === 1 ? 'one at a time (latency)' : `${clients} concurrent (throughput)`;
      comparisons.push({
        suite: 'outbox write',
        scenario: `${scenario}, ${load}, transactions/s without vs with ${writes}`,
        ...runs,
        target,
      });
    }
    // The module's row against the same row written by hand, in the same transaction shape: what the module
    // itself adds on top of any outbox row.
    const againstHand = await alternate(
      ROUNDS,
      async () => {
        await reset();
        return concurrently(TRANSACTIONS, CONCURRENT_TRANSACTIONS, (n) =>
          dataSource.transaction(async (manager) => {
            await placeOrder(manager, n);
            await byHand(manager, n);
          }),
        );
      },
      async () => {
        await reset();
        return concurrently(TRANSACTIONS, CONCURRENT_TRANSACTIONS, (n) =>
          dataSource.transaction(async (manager) => {
            await placeOrder(manager, n);
            await byModule(manager, n);
          }),
        );
      },
    );
    comparisons.push({
      suite: 'outbox write',
      scenario: `${ORDER}, ${CONCURRENT_TRANSACTIONS} concurrent (throughput), transactions/s with the row inserted by hand vs with the module's row (target: at most 1.05x the hand-written row's cost)`,
      ...againstHand,
      target: 1 / 1.05,
    });
    await reset();
    return comparisons;
  } finally {
    await app.close();
  }
}

/** Writes the n-th message's outbox row in `manager`'s transaction. */
type RowWriter = (manager: EntityManager, n: number) => Promise<unknown>;

/** The n-th message's outbox row written with one plain INSERT, as a hand-rolled outbox would. */
async function insertRowByHand(manager: EntityManager, prefix: string, n: number): Promise<void> {
  const { body, properties } = rawEnvelope(n);
  await manager.query(
    'INSERT INTO "rm_outbox" ("message_id", "exchange", "routing_key", "properties", "body") VALUES ($1, $2, $3, $4, $5)',
    [properties.messageId, `${prefix}.events`, 'bench.order-placed', JSON.stringify(properties), body],
  );
}

/** One raw publish with the same envelope, persistent and mandatory, resolved by its broker confirm. */
function rawPublish(channel: ConfirmChannel, exchange: string, n: number): Promise<void> {
  const { body, properties } = rawEnvelope(n);
  return new Promise<void>((resolve, reject) => {
    channel.publish(
      exchange,
      'bench.order-placed',
      body,
      { ...properties, mandatory: true },
      (error: Error | null) => (error ? reject(error) : resolve()),
    );
  });
}

/** Raw confirmed publishes of `count` envelopes, `window` in flight: what the broker can take. */
async function rawWindowed(
  channel: ConfirmChannel,
  exchange: string,
  count: number,
  window: number,
): Promise<Measurement> {
  let next = 0;
  const end = startRun(count);
  await Promise.all(
    Array.from({ length: window }, async () => {
      while (next < count) await rawPublish(channel, exchange, next++);
    }),
  );
  return end();
}

/** Waits until `relay` has published `target` messages in all. */
async function relayed(relay: OutboxRelay, target: number): Promise<void> {
  while (relay.stats.published < target) await new Promise((resolve) => setTimeout(resolve, 2));
}

/**
 * The relay draining MESSAGES committed rows (timed from the commit to the last row marked published) against a
 * raw confirm channel publishing the same envelopes with the relay's batch size in flight.
 */
async function relayThroughput(
  db: BenchDatabase,
  prefix: string,
  queueType: QueueType,
  keys: number,
): Promise<Comparison> {
  const exchange = `${prefix}.events`;
  const sink = `${prefix}.sink-${queueType}-${keys}`;
  const connection: ChannelModel = await rawConnection(`${prefix}.raw`);
  const setup = await connection.createChannel();
  await setup.assertExchange(exchange, 'topic', { durable: true });
  await setup.assertQueue(sink, { durable: true, arguments: { 'x-queue-type': queueType } });
  await setup.bindQueue(sink, exchange, 'bench.order-placed');
  const writerSource = await db.connect(2);
  const relaySource = await db.connect(4);
  const writer = await bootApp({
    urls: AMQP_URL,
    exchange,
    connectionName: `${prefix}.writer`,
    dataSource: writerSource,
    outbox: { relay: false },
  });
  const relayApp = await bootApp({
    urls: AMQP_URL,
    exchange,
    connectionName: `${prefix}.relay`,
    dataSource: relaySource,
    consumersEnabled: false,
    outbox: { batchSize: BATCH, concurrency: RELAY_CONCURRENCY, retentionMs: 0, pruneIntervalMs: 3_600_000 },
  });
  try {
    const channel = await connection.createConfirmChannel();
    const publisher = writer.get(MessagePublisher);
    const relay = relayApp.get(OutboxRelay);
    const runs = await alternate(
      ROUNDS,
      async () => {
        const measurement = await rawWindowed(channel, exchange, MESSAGES, BATCH);
        await setup.purgeQueue(sink);
        return measurement;
      },
      async () => {
        const before = relay.stats.published;
        await writerSource.transaction(async (manager) => {
          for (let n = 0; n < MESSAGES; n++) {
            await publisher.publish(benchMessage(n), {
              manager,
              orderingKey: keys > 0 ? `key-${n % keys}` : undefined,
            });
          }
        });
        const end = startRun(MESSAGES);
        await relayed(relay, before + MESSAGES);
        const measurement = end();
        await setup.purgeQueue(sink);
        await writerSource.query(`DELETE FROM rm_outbox`);
        return measurement;
      },
    );
    await channel.close();
    await setup.close();
    return {
      suite: 'outbox relay',
      scenario: `${queueType} queue, ${keys > 0 ? `${keys} ordering keys` : 'no ordering key'}, batch ${BATCH}: raw confirms vs relay`,
      ...runs,
      target: keys > 0 ? 0.6 : 0,
      minRate: 5000,
    };
  } finally {
    await relayApp.close();
    await writer.close();
    await deleteByPrefix(connection, prefix, [sink, exchange]);
    await connection.close();
  }
}

/** Sends `count` messages at `rate` per second; `send(n)` may run concurrently with the next ones. */
async function paced(count: number, rate: number, send: (n: number) => Promise<void>): Promise<void> {
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let n = 0; n < count; n++) {
    const due = started + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const task: Promise<void> = send(n).finally(() => inFlight.delete(task));
    inFlight.add(task);
    if (inFlight.size >= 64) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
}

/**
 * Commit-to-publish latency at LATENCY_RATE messages/s offered: each message its own transaction, timed from the
 * moment its commit returned to its arrival at a consumer. The baseline sends the same envelopes at the same
 * pace straight to the broker with a confirm, timed from the send to the arrival.
 */
async function commitToPublishLatency(db: BenchDatabase, prefix: string): Promise<LatencyComparison> {
  const exchange = `${prefix}.events`;
  const sink = `${prefix}.latency`;
  const connection = await rawConnection(`${prefix}.raw-latency`);
  const setup = await connection.createChannel();
  await setup.assertExchange(exchange, 'topic', { durable: true });
  await setup.assertQueue(sink, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await setup.bindQueue(sink, exchange, 'bench.order-placed');
  const dataSource = await db.connect(10);
  const app = await bootApp({ urls: AMQP_URL, exchange, connectionName: `${prefix}.latency`, dataSource });
  try {
    const sentAt = new Map<string, number>();
    /** Messages that arrived before the await of their commit returned to the sender: latency 0. */
    const arrivedFirst = new Set<string>();
    const latencies: number[] = [];
    let expected = 0;
    let arrivedAll: () => void = () => undefined;
    const consumer = await connection.createChannel();
    await consumer.consume(
      sink,
      (message) => {
        if (!message) return;
        const arrived = performance.now();
        const key = message.properties.headers?.['rm-idempotency-key'] as string;
        const sent = sentAt.get(key);
        if (sent !== undefined) {
          latencies.push(arrived - sent);
          sentAt.delete(key);
        } else arrivedFirst.add(key);
        if (latencies.length === expected) arrivedAll();
      },
      { noAck: true },
    );
    const measure = async (count: number, send: (n: number) => Promise<void>): Promise<number[]> => {
      latencies.length = 0;
      arrivedFirst.clear();
      expected = count;
      const done = new Promise<void>((resolve) => (arrivedAll = resolve));
      await paced(count, LATENCY_RATE, send);
      await done;
      return [...latencies];
    };
    const channel = await connection.createConfirmChannel();
    const publisher = app.get(MessagePublisher);
    const direct = async (n: number): Promise<void> => {
      sentAt.set(`order-${n}`, performance.now());
      await rawPublish(channel, exchange, n);
    };
    const throughOutbox = async (n: number): Promise<void> => {
      await dataSource.transaction((manager) => publisher.publish(benchMessage(n), { manager }));
      // NOTE: the relay, woken by the commit, may deliver the message before this continuation runs; without
      // this the sample would be lost and the run would wait for it for ever.
      if (arrivedFirst.delete(`order-${n}`)) {
        latencies.push(0);
        if (latencies.length === expected) arrivedAll();
      } else sentAt.set(`order-${n}`, performance.now());
    };
    // A second of each, unmeasured, so connections, pools and the queue are warm for both.
    await measure(LATENCY_RATE, direct);
    await measure(LATENCY_RATE, throughOutbox);
    const count = LATENCY_RATE * LATENCY_SECONDS;
    const baselineMs = await measure(count, direct);
    const candidateMs = await measure(count, throughOutbox);
    await consumer.close();
    await channel.close();
    await setup.close();
    return {
      suite: 'outbox latency',
      scenario: `${LATENCY_RATE} msgs/s offered for ${LATENCY_SECONDS} s, quorum queue: raw send-to-arrival vs commit-to-arrival`,
      baselineMs,
      candidateMs,
      targets: { p50Ms: 10, p99Ms: 50 },
    };
  } finally {
    await app.close();
    await deleteByPrefix(connection, prefix, [sink, exchange]);
    await connection.close();
  }
}

/**
 * The transactional outbox: what its row adds to a business transaction, how fast the relay drains committed
 * rows, and how long a committed message takes to reach a consumer. Each against a baseline of the same run.
 */
export const outboxSuite: Suite = {
  name: 'outbox',
  async run() {
    const prefix = uniquePrefix('outbox');
    const db = await createBenchDatabase(SHOP_TABLES);
    try {
      const comparisons: Comparison[] = [];
      if (PARTS.has('write')) comparisons.push(...(await writeCost(db, prefix)));
      if (PARTS.has('floor')) {
        comparisons.push(
          ...(await pgbenchFloor(db, `${prefix}.events`, TRANSACTIONS, CONCURRENT_TRANSACTIONS)),
        );
      }
      if (PARTS.has('relay')) {
        comparisons.push(await relayThroughput(db, prefix, 'quorum', 0));
        comparisons.push(await relayThroughput(db, prefix, 'classic', 0));
        comparisons.push(await relayThroughput(db, prefix, 'quorum', 100));
      }
      const latencies = PARTS.has('latency') ? [await commitToPublishLatency(db, prefix)] : [];
      return { comparisons, latencies };
    } finally {
      await db.drop();
    }
  },
};
