import { randomUUID } from 'node:crypto';
import type { ChannelModel } from 'amqplib';
import type { DataSource } from 'typeorm';
import { MessagePublisher } from 'nestjs-reliable-messaging';
import { benchMessage, rawEnvelope } from './bench-message';
import { createBenchDatabase } from './bench-database';
import {
  alternate,
  AMQP_URL,
  deleteByPrefix,
  medianCpuPerMessage,
  medianRate,
  percentile,
  rawConnection,
  ROUNDS,
  startRun,
  uniquePrefix,
  until,
  type Comparison,
  type Measurement,
  type Suite,
} from './harness';
import { bootApp } from './outbox.bench';

/** Transactions of each write run: `BENCH_SCHEDULING_TRANSACTIONS`, else 2,000. */
const TRANSACTIONS = Number(process.env.BENCH_SCHEDULING_TRANSACTIONS ?? 2_000);
/** Transactions at once in the write runs. */
const CONCURRENCY = 10;
/** Rows not yet due in the large table: `BENCH_SCHEDULING_ROWS`, else 1,000,000. */
const SCHEDULED_ROWS = Number(process.env.BENCH_SCHEDULING_ROWS ?? 1_000_000);
/** Messages scheduled a second during each lateness run, each `PROBE_DELAY_MS` ahead: `BENCH_SCHEDULING_PROBE_RATE`, else 20. */
const PROBE_RATE = Number(process.env.BENCH_SCHEDULING_PROBE_RATE ?? 20);
/** Messages scheduled in each lateness run: `BENCH_SCHEDULING_PROBES`, else 25 s' worth. */
const PROBES = Number(process.env.BENCH_SCHEDULING_PROBES ?? 25 * PROBE_RATE);
const PROBE_DELAY_MS = 2_000;
/** Immediate messages a second the relay carries meanwhile: `BENCH_SCHEDULING_TRAFFIC_RATE`, else 200. */
const TRAFFIC_RATE = Number(process.env.BENCH_SCHEDULING_TRAFFIC_RATE ?? 200);
/** The sizes the due query is planned and timed at. */
const PLAN_SIZES = [...[0, 10_000, 100_000].filter((size) => size < SCHEDULED_ROWS), SCHEDULED_ROWS];
/** The p99 target: a due message leaves at most this late. */
const LATE_TARGET_MS = 1_000;

/** Runs `count` transactions, `CONCURRENCY` at once, each `work(n)`; times them. */
async function concurrently(count: number, work: (n: number) => Promise<unknown>): Promise<Measurement> {
  let next = 0;
  const end = startRun(count);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let n = next++; n < count; n = next++) await work(n);
    }),
  );
  return end();
}

/** Writes `rows` scheduled rows due in a day or more, in one statement, as a service scheduling far ahead leaves them. */
async function fillScheduled(dataSource: DataSource, exchange: string, rows: number): Promise<void> {
  if (rows <= 0) return;
  const { properties, body } = rawEnvelope(0);
  await dataSource.query(
    `INSERT INTO rm_scheduled (message_id, idempotency_key, exchange, routing_key, properties, body, deliver_at) ` +
      `SELECT u, 'far-' || u, $2, 'bench.order-placed', jsonb_set($3::jsonb, '{messageId}', to_jsonb(u::text)), $4, ` +
      `now() + interval '1 day' + n * interval '1 second' ` +
      `FROM (SELECT gen_random_uuid() AS u, n FROM generate_series(1, $1) n) g`,
    [rows, exchange, JSON.stringify(properties), body],
  );
  await dataSource.query('ANALYZE rm_scheduled');
}

/**
 * The write: a transaction with one message through the outbox against the same with the message scheduled a day
 * ahead (`delayMs`), rounds alternated, the relay and the promoter off. Target: scheduling adds at most 10%.
 */
async function writeCost(dataSource: DataSource, prefix: string): Promise<Comparison> {
  const app = await bootApp({
    urls: AMQP_URL,
    exchange: `${prefix}.events`,
    connectionName: `${prefix}.writer`,
    dataSource,
    outbox: { relay: false },
  });
  try {
    const publisher = app.get(MessagePublisher);
    const runs = await alternate(
      ROUNDS,
      async () => {
        await dataSource.query('TRUNCATE rm_outbox, rm_scheduled');
        return concurrently(TRANSACTIONS, (n) =>
          dataSource.transaction((manager) => publisher.publish(benchMessage(n), { manager })),
        );
      },
      async () => {
        await dataSource.query('TRUNCATE rm_outbox, rm_scheduled');
        return concurrently(TRANSACTIONS, (n) =>
          dataSource.transaction((manager) =>
            publisher.publish(benchMessage(n), { manager, delayMs: 86_400_000 }),
          ),
        );
      },
    );
    return {
      suite: 'scheduling',
      scenario: `write: one message a transaction, ${CONCURRENCY} at once, outbox vs scheduled a day ahead`,
      ...runs,
      target: 0.9,
    };
  } finally {
    await app.close();
    await dataSource.query('TRUNCATE rm_outbox, rm_scheduled');
  }
}

/**
 * How late due messages leave: PROBES messages scheduled PROBE_DELAY_MS ahead at PROBE_RATE, each timed from its
 * due time to its arrival at a consumer of its queue, while the relay carries TRAFFIC_RATE immediate messages a
 * second; with `rows` rows not yet due in the table.
 */
async function lateness(
  dataSource: DataSource,
  connection: ChannelModel,
  prefix: string,
  rows: number,
): Promise<number[]> {
  const exchange = `${prefix}.events`;
  const probes = `${prefix}.probes`;
  const traffic = `${prefix}.traffic`;
  const setup = await connection.createChannel();
  await setup.assertExchange(exchange, 'topic', { durable: true });
  await setup.assertQueue(probes, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await setup.bindQueue(probes, exchange, 'scheduling.probe');
  await setup.assertQueue(traffic, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum', 'x-max-length': 10_000, 'x-overflow': 'drop-head' },
  });
  await setup.bindQueue(traffic, exchange, 'bench.order-placed');
  await dataSource.query('TRUNCATE rm_outbox, rm_scheduled');
  await fillScheduled(dataSource, exchange, rows);
  const app = await bootApp({
    urls: AMQP_URL,
    exchange,
    connectionName: `${prefix}.relay-${rows}`,
    dataSource,
    consumersEnabled: false,
  });
  const dueAt = new Map<string, number>();
  const lateMs: number[] = [];
  const consumer = await connection.createChannel();
  try {
    await consumer.consume(
      probes,
      (message) => {
        const key: unknown = message?.properties.headers?.['rm-idempotency-key'];
        const due = typeof key === 'string' ? dueAt.get(key) : undefined;
        if (due !== undefined) lateMs.push(Math.max(0, Date.now() - due));
      },
      { noAck: true },
    );
    const publisher = app.get(MessagePublisher);
    let trafficSent = 0;
    let stop = false;
    const carry = async (): Promise<void> => {
      const started = performance.now();
      while (!stop) {
        await dataSource.transaction((manager) => publisher.publish(benchMessage(trafficSent), { manager }));
        trafficSent++;
        const wait = started + (trafficSent * 1000) / TRAFFIC_RATE - performance.now();
        if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      }
    };
    const carrying = carry();
    const started = performance.now();
    for (let n = 0; n < PROBES; n++) {
      const key = `probe-${randomUUID()}`;
      const deliverAt = new Date(Date.now() + PROBE_DELAY_MS);
      await dataSource.transaction((manager) =>
        publisher.publish(Object.assign(benchMessage(n), { orderId: key }), {
          manager,
          routingKey: 'scheduling.probe',
          deliverAt,
        }),
      );
      dueAt.set(key, deliverAt.getTime());
      const wait = started + ((n + 1) * 1000) / PROBE_RATE - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    await until(
      () => lateMs.length >= PROBES,
      () => lateMs.length,
    );
    stop = true;
    await carrying;
    return lateMs;
  } finally {
    await consumer.close();
    await app.close();
    await setup.close();
  }
}

/**
 * The promotion's plan and time, with `rows` rows not yet due and none due: EXPLAIN ANALYZE of the statement the
 * promoter sends (recorded as it sends it), in a transaction rolled back after.
 */
async function dueQueryPlan(
  dataSource: DataSource,
  promotion: string,
): Promise<{ plan: string; ms: number }> {
  const runner = dataSource.createQueryRunner();
  await runner.query('BEGIN');
  try {
    const rows = (await runner.query(`EXPLAIN (ANALYZE, BUFFERS) ${promotion}`, [200])) as Array<{
      'QUERY PLAN': string;
    }>;
    const plan = rows.map((row) => row['QUERY PLAN']);
    const ms = Number(/Execution Time: ([\d.]+) ms/.exec(plan.join('\n'))?.[1] ?? NaN);
    const scans = plan
      .map((line) => line.trim().replace(/^-> +/, ''))
      .filter((line) => /Scan .*on rm_scheduled/.test(line))
      .map((line) => line.replace(/ +\(cost.*$/, ''));
    return { plan: [...new Set(scans)].join('; '), ms };
  } finally {
    await runner.query('ROLLBACK');
    await runner.release();
  }
}

/** The statement the promoter sends, recorded from `dataSource` while an app with a promoter starts. */
async function recordPromotion(dataSource: DataSource, prefix: string): Promise<string> {
  let promotion: string | undefined;
  const query = dataSource.query.bind(dataSource);
  // NOTE: the promotion is internal to the module; the suite reads it as the promoter sends it.
  dataSource.query = ((sql: string, parameters?: unknown[]) => {
    if (sql.startsWith('WITH due AS')) promotion = sql;
    return query(sql, parameters);
  }) as DataSource['query'];
  const app = await bootApp({
    urls: AMQP_URL,
    exchange: `${prefix}.events`,
    connectionName: `${prefix}.promoter`,
    dataSource,
    consumersEnabled: false,
  });
  try {
    await until(
      () => promotion !== undefined,
      () => 0,
      10_000,
    );
  } finally {
    await app.close();
    dataSource.query = query;
  }
  return promotion!;
}

/**
 * Scheduled messages at scale: the cost of a scheduled write against an outbox write, how late due messages leave
 * with 1,000,000 rows not yet due while the relay carries traffic, and the promotion's plan and time as the table
 * grows.
 */
export const schedulingSuite: Suite = {
  name: 'scheduling',
  async run() {
    const prefix = uniquePrefix('scheduling');
    const db = await createBenchDatabase();
    const connection = await rawConnection(`${prefix}.raw`);
    try {
      const dataSource = await db.connect(CONCURRENCY + 4);
      const write = await writeCost(dataSource, prefix);

      const promotion = await recordPromotion(dataSource, prefix);
      const plans: Array<[number, { plan: string; ms: number }]> = [];
      for (const size of PLAN_SIZES) {
        await dataSource.query('TRUNCATE rm_scheduled');
        await fillScheduled(dataSource, `${prefix}.events`, size);
        plans.push([size, await dueQueryPlan(dataSource, promotion)]);
      }

      const empty = await lateness(dataSource, connection, prefix, 0);
      const full = await lateness(dataSource, connection, prefix, SCHEDULED_ROWS);
      const p99 = { empty: percentile(empty, 99), full: percentile(full, 99) };
      const ratio = medianRate(write.candidate) / medianRate(write.baseline);
      const cpuRatio = medianCpuPerMessage(write.candidate) / medianCpuPerMessage(write.baseline);
      console.log(`scheduling: write scheduled/outbox ${ratio.toFixed(2)}x cpu ${cpuRatio.toFixed(2)}x`);
      console.log(
        `scheduling: due p99 late ${Math.round(p99.full)} ms with ${SCHEDULED_ROWS.toLocaleString('en')} scheduled ` +
          `(empty table ${Math.round(p99.empty)} ms)`,
      );
      const ms = (value: number): string => `${value.toFixed(0)} ms`;
      const table = [
        '| what | measured | target |',
        '| --- | --- | --- |',
        `| a scheduled write against an outbox write (throughput) | ${ratio.toFixed(2)}x, CPU ${cpuRatio.toFixed(2)}x | ≥ 0.9x: ${ratio >= 0.9 ? 'met' : 'NOT met'} |`,
        `| how late a due message arrives, ${SCHEDULED_ROWS.toLocaleString('en')} rows not yet due, ${TRAFFIC_RATE} msgs/s of traffic | p50 ${ms(percentile(full, 50))}, p99 ${ms(p99.full)}, max ${ms(Math.max(...full))} (${full.length} messages) | p99 ≤ ${LATE_TARGET_MS} ms: ${p99.full <= LATE_TARGET_MS ? 'met' : 'NOT met'} |`,
        `| the same with an empty table | p50 ${ms(percentile(empty, 50))}, p99 ${ms(p99.empty)}, max ${ms(Math.max(...empty))} | |`,
        ...plans.map(
          ([size, { plan, ms: took }]) =>
            `| the promotion with ${size.toLocaleString('en')} rows not yet due | ${took.toFixed(3)} ms: ${plan || 'no scan of rm_scheduled'} | |`,
        ),
      ];
      return { comparisons: [write], latencies: [], tables: [table.join('\n')] };
    } finally {
      await deleteByPrefix(connection, prefix, [`${prefix}.probes`, `${prefix}.traffic`, `${prefix}.events`]);
      await connection.close();
      await db.drop();
    }
  },
};
