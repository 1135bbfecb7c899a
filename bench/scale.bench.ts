import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import type { DataSource } from 'typeorm';
import { MessagePublisher } from 'nestjs-reliable-messaging';
import { ConsumerRegistry, OutboxRelay } from 'nestjs-reliable-messaging/operations';
import { benchMessage, rawEnvelope } from './bench-message';
import { createBenchDatabase } from './bench-database';
import { prepublish } from './consume.bench';
import {
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  medianRate,
  percentile,
  Progress,
  rawConnection,
  ROUNDS,
  startRun,
  uniquePrefix,
  until,
  type Comparison,
  type Measurement,
  type Suite,
} from './harness';
import { consumerApp, drain } from './inbox.bench';
import { bootApp } from './outbox.bench';

/** Handlers at once (and prefetch) of the inbox case's consumers, as in the inbox suite. */
const CONCURRENCY = Number(process.env.BENCH_PREFETCH ?? 20);
/** Rows already in `rm_inbox` for the inbox case's large side: `BENCH_SCALE_INBOX_ROWS`, else 10,000,000. */
const INBOX_ROWS = Number(process.env.BENCH_SCALE_INBOX_ROWS ?? 10_000_000);
/** The outbox backlog of the large side: `BENCH_SCALE_OUTBOX_ROWS`, else 1,000,000. */
const OUTBOX_ROWS = Number(process.env.BENCH_SCALE_OUTBOX_ROWS ?? 1_000_000);
/** The outbox backlog of the small side: `BENCH_SCALE_OUTBOX_SMALL_ROWS`, else 10,000. */
const OUTBOX_SMALL_ROWS = Number(process.env.BENCH_SCALE_OUTBOX_SMALL_ROWS ?? 10_000);
/** Drains of the large outbox backlog (the small one drains ROUNDS times): `BENCH_SCALE_LARGE_ROUNDS`, else 1. */
const LARGE_ROUNDS = Number(process.env.BENCH_SCALE_LARGE_ROUNDS ?? 1);
/** Rows committed a second while the large backlog drains, each timed to its arrival: `BENCH_SCALE_PROBE_RATE`, else 2. */
const PROBE_RATE = Number(process.env.BENCH_SCALE_PROBE_RATE ?? 2);
/** The cases to run: `BENCH_SCALE_CASES=inbox-growth` picks some; all by default. */
const SELECTED_CASES = process.env.BENCH_SCALE_CASES?.split(',').map((name) => name.trim());
/** Rows one fill statement writes: a fill of millions goes in statements of this many, each its own transaction. */
const FILL_CHUNK = 1_000_000;
/** The relay's batch and rounds at once: the module's defaults. */
const BATCH = 200;
const RELAY_CONCURRENCY = 2;

/** One case of the suite: its comparison (small side as baseline), and what it reports besides. */
interface ScaleCase {
  name: string;
  comparison: Comparison;
  facts: Array<[string, string]>;
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The benchmark message with a random order id: its idempotency key lands anywhere in the inbox's index, as real keys do. */
function randomKeyEnvelope(n: number): ReturnType<typeof rawEnvelope> {
  return rawEnvelope(n, Object.assign(benchMessage(n), { orderId: randomUUID() }));
}

/** Writes `total` rows in statements of FILL_CHUNK: `sql` takes the chunk's row count as $1. */
async function fill(dataSource: DataSource, total: number, sql: string, values: unknown[]): Promise<number> {
  const started = performance.now();
  for (let done = 0; done < total; done += FILL_CHUNK) {
    await dataSource.query(sql, [Math.min(FILL_CHUNK, total - done), ...values]);
  }
  return performance.now() - started;
}

/** EXPLAIN ANALYZE of `sql` in a transaction rolled back after, so that it changes nothing. */
async function explain(dataSource: DataSource, sql: string, values: unknown[]): Promise<string> {
  const runner = dataSource.createQueryRunner();
  await runner.query('BEGIN');
  try {
    const rows = (await runner.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, values)) as Array<{
      'QUERY PLAN': string;
    }>;
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await runner.query('ROLLBACK');
    await runner.release();
  }
}

/**
 * Inbox growth: dedup-on consumption with INBOX_ROWS rows already in `rm_inbox` (one consumer's, random keys, an
 * hour old) against an empty table, two databases side by side, rounds alternated. Messages carry random keys, so
 * each insert probes the whole primary key, as production keys (UUIDs, order ids) do.
 */
async function inboxGrowth(prefix: string, connection: ChannelModel): Promise<ScaleCase> {
  const exchange = `${prefix}.events`;
  const queues = { small: `${prefix}.inbox-small`, large: `${prefix}.inbox-large` };
  const small = await createBenchDatabase();
  const large = await createBenchDatabase();
  const progress: { current?: Progress } = {};
  try {
    const sources = {
      small: await small.connect(CONCURRENCY + 2),
      large: await large.connect(CONCURRENCY + 2),
    };
    const apps = {
      small: consumerApp(exchange, queues.small, true, sources.small, progress),
      large: consumerApp(exchange, queues.large, true, sources.large, progress),
    };
    // A first boot declares each queue and names the consumer its inbox rows belong to.
    let consumer = '';
    for (const app of [apps.small, apps.large]) {
      const context = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
      consumer = context.get(ConsumerRegistry).consumers[0].name;
      await context.close();
    }
    const fillMs = await fill(
      sources.large,
      INBOX_ROWS,
      `INSERT INTO rm_inbox (consumer, idempotency_key, message_id, message_type, processed_at) ` +
        `SELECT $2, gen_random_uuid()::text, gen_random_uuid()::text, 'bench.order-placed', now() - interval '1 hour' ` +
        `FROM generate_series(1, $1)`,
      [consumer],
    );
    await sources.large.query('VACUUM ANALYZE rm_inbox');
    const runs = { baseline: [] as Measurement[], candidate: [] as Measurement[] };
    for (let round = 0; round < ROUNDS; round++) {
      await prepublish(connection, queues.small, MESSAGES, randomKeyEnvelope);
      runs.baseline.push(await drain(apps.small, progress));
      await sources.small.query('TRUNCATE rm_inbox');
      await prepublish(connection, queues.large, MESSAGES, randomKeyEnvelope);
      runs.candidate.push(await drain(apps.large, progress));
      // The run's rows, not the filler: theirs are the only ones newer than half an hour (processed_at's index).
      await sources.large.query(`DELETE FROM rm_inbox WHERE processed_at > now() - interval '30 minutes'`);
    }
    const [sizes] = await sources.large.query<Array<{ t: string; k: string; p: string; n: string }>>(
      `SELECT pg_table_size('rm_inbox') AS t, pg_relation_size('rm_inbox_pkey') AS k, ` +
        `pg_relation_size('rm_inbox_processed_at_idx') AS p, (SELECT count(*) FROM rm_inbox) AS n`,
    );
    const plan = await explain(
      sources.large,
      `INSERT INTO "rm_inbox" ("consumer", "idempotency_key", "message_id", "message_type") VALUES ($1, $2, $3, $4) ` +
        `ON CONFLICT DO NOTHING`,
      [consumer, randomUUID(), randomUUID(), 'bench.order-placed'],
    );
    return {
      name: 'inbox-growth',
      comparison: {
        suite: 'scale',
        scenario: `inbox-growth: dedup on, quorum queue, ${CONCURRENCY} at once, empty rm_inbox vs ${Number(sizes.n).toLocaleString('en')} rows`,
        ...runs,
        target: 0.9,
      },
      facts: [
        ['filled in', seconds(fillMs)],
        [
          'table, primary key, processed_at index',
          `${mib(Number(sizes.t))}, ${mib(Number(sizes.k))}, ${mib(Number(sizes.p))}`,
        ],
        ['the dedup insert on the large table', plan.replace(/\n\s*/g, '; ')],
      ],
    };
  } finally {
    await deleteByPrefix(connection, prefix, [queues.small, queues.large, exchange]);
    await small.drop();
    await large.drop();
  }
}

/** What the claim's EXPLAIN needs of the relay's store: its claim, run on a runner, and the rollback that ends it. */
interface ClaimingStore {
  claim(runner: unknown, limit: number): Promise<unknown>;
  rollback(runner: unknown): Promise<void>;
}

/**
 * The relay's claim, EXPLAINed as the relay runs it (a prepared statement, its generic plan) on the table as it
 * stands: the relay's own store runs the claim on a runner that EXPLAINs the claim's statement instead of running it.
 */
async function claimPlan(dataSource: DataSource, relay: OutboxRelay): Promise<string> {
  // NOTE: the store is internal to the module; the relay holds it.
  const { store } = relay as unknown as { store: ClaimingStore };
  const runner = dataSource.createQueryRunner();
  const plans: string[] = [];
  const explaining = {
    connect: async () => ({}),
    query: async (sql: string, parameters?: unknown[]) => {
      if (!sql.includes('WITH retrying')) return runner.query(sql, parameters) as Promise<unknown>;
      await runner.query(`PREPARE scale_claim AS ${sql}`);
      await runner.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const values = (parameters ?? []).map(Number).join(', ');
      const rows = (await runner.query(`EXPLAIN EXECUTE scale_claim(${values})`)) as Array<{
        'QUERY PLAN': string;
      }>;
      plans.push(rows.map((row) => row['QUERY PLAN']).join('\n'));
      await runner.query('DEALLOCATE scale_claim');
      return [];
    },
  };
  try {
    await store.claim(explaining, BATCH);
  } finally {
    await store.rollback(explaining);
    await runner.release();
  }
  return plans[0] ?? '';
}

/**
 * Outbox backlog: the relay draining OUTBOX_ROWS pending rows (as a long broker outage leaves them) against
 * OUTBOX_SMALL_ROWS, each timed from the wake after the backlog's commit to its last row marked published. While
 * the large backlog drains, PROBE_RATE rows a second are committed through `publish()` and timed from their commit
 * to their arrival: how long a new message waits behind a backlog.
 */
async function outboxBacklog(prefix: string, connection: ChannelModel): Promise<ScaleCase> {
  const exchange = `${prefix}.events`;
  const sink = `${prefix}.outbox-sink`;
  const probes = `${prefix}.outbox-probes`;
  const db = await createBenchDatabase();
  const setup = await connection.createChannel();
  try {
    await setup.assertExchange(exchange, 'topic', { durable: true });
    // The sink keeps the last 20,000: a million relayed messages need not sit in the broker for the run.
    await setup.assertQueue(sink, {
      durable: true,
      arguments: { 'x-queue-type': 'quorum', 'x-max-length': 20_000, 'x-overflow': 'drop-head' },
    });
    await setup.bindQueue(sink, exchange, 'bench.order-placed');
    await setup.assertQueue(probes, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await setup.bindQueue(probes, exchange, 'scale.probe');
    const dataSource = await db.connect(6);
    const app = await bootApp({
      urls: AMQP_URL,
      exchange,
      connectionName: `${prefix}.relay`,
      dataSource,
      consumersEnabled: false,
      // Woken by the suite alone: a poll would start on a backlog still being written.
      outbox: {
        batchSize: BATCH,
        concurrency: RELAY_CONCURRENCY,
        pollIntervalMs: 3_600_000,
        retentionMs: 3_600_000,
        pruneIntervalMs: 3_600_000,
      },
    });
    const relay = app.get(OutboxRelay);
    const publisher = app.get(MessagePublisher);
    const template = rawEnvelope(0);
    const backlog = async (rows: number): Promise<number> =>
      fill(
        dataSource,
        rows,
        `INSERT INTO rm_outbox (message_id, exchange, routing_key, properties, body) ` +
          `SELECT u, $2, 'bench.order-placed', jsonb_set($3::jsonb, '{messageId}', to_jsonb(u::text)), $4 ` +
          `FROM (SELECT gen_random_uuid() AS u FROM generate_series(1, $1)) g`,
        [exchange, JSON.stringify(template.properties), template.body],
      );
    /** A fresh backlog of `rows` pending rows, committed without waking the relay; resolves with the fill's time. */
    const freshBacklog = async (rows: number): Promise<number> => {
      await dataSource.query('TRUNCATE rm_outbox');
      await setup.purgeQueue(sink);
      const fillMs = await backlog(rows);
      await dataSource.query('ANALYZE rm_outbox');
      return fillMs;
    };
    /** Wakes the relay on the backlog of `rows` and times it until the last row is marked published. */
    const drainBacklog = async (rows: number, whileDraining?: () => Promise<void>): Promise<Measurement> => {
      const before = relay.stats.published;
      const end = startRun(rows);
      relay.wake();
      await Promise.all([
        until(
          () => relay.stats.published >= before + rows,
          () => relay.stats.published,
        ),
        whileDraining?.() ?? Promise.resolve(),
      ]);
      return end();
    };

    // Probe rows: committed one per transaction during the large drain, timed to their arrival on `probes`.
    const committedAt = new Map<string, number>();
    const waitsMs: number[] = [];
    const probeChannel = await connection.createChannel();
    await probeChannel.consume(
      probes,
      (message) => {
        const key: unknown = message?.properties.headers?.['rm-idempotency-key'];
        const at = typeof key === 'string' ? committedAt.get(key) : undefined;
        if (at !== undefined) waitsMs.push(performance.now() - at);
      },
      { noAck: true },
    );
    let remainingAtProbe = 0;
    const probeWhileDraining = (rows: number) => async (): Promise<void> => {
      const before = relay.stats.published;
      let n = 0;
      while (relay.stats.published - before < rows) {
        const key = `probe-${n++}-${randomUUID()}`;
        await dataSource.transaction((manager) =>
          publisher.publish(Object.assign(benchMessage(n), { orderId: key }), {
            manager,
            routingKey: 'scale.probe',
          }),
        );
        committedAt.set(key, performance.now());
        if (n === 1) remainingAtProbe = rows - (relay.stats.published - before);
        await new Promise((resolve) => setTimeout(resolve, 1000 / PROBE_RATE));
      }
      await until(
        () => waitsMs.length >= committedAt.size,
        () => waitsMs.length,
      );
    };

    const runs = { baseline: [] as Measurement[], candidate: [] as Measurement[] };
    for (let round = 0; round < ROUNDS; round++) {
      await freshBacklog(OUTBOX_SMALL_ROWS);
      runs.baseline.push(await drainBacklog(OUTBOX_SMALL_ROWS));
    }
    let plan = '';
    let largeFillMs = 0;
    for (let round = 0; round < LARGE_ROUNDS; round++) {
      largeFillMs = await freshBacklog(OUTBOX_ROWS);
      if (round === 0) plan = await claimPlan(dataSource, relay);
      runs.candidate.push(await drainBacklog(OUTBOX_ROWS, probeWhileDraining(OUTBOX_ROWS)));
    }
    await probeChannel.close();
    await app.close();
    const drainRate = medianRate(runs.candidate);
    const indexScan =
      /Index Scan using rm_outbox_pending_idx on rm_outbox o/.test(plan) &&
      !/Sort|Seq Scan on rm_outbox o/.test(plan);
    return {
      name: 'outbox-backlog',
      comparison: {
        suite: 'scale',
        scenario: `outbox-backlog: relay, batch ${BATCH}, ${RELAY_CONCURRENCY} rounds at once, quorum queue, ${OUTBOX_SMALL_ROWS.toLocaleString('en')} vs ${OUTBOX_ROWS.toLocaleString('en')} pending rows`,
        ...runs,
        target: 0.8,
      },
      facts: [
        ['the large backlog written in', seconds(largeFillMs)],
        [
          'the claim on the large backlog (generic plan)',
          `${indexScan ? 'index scan in id order' : 'NOT an index scan'}: ${plan
            .split('\n')
            .map((line) => line.trim())
            .filter((line) => /^(Limit|-> +(LockRows|.* on rm_outbox o\b))/.test(line))
            .join('; ')}`,
        ],
        [
          'a row committed during the large drain, to its arrival',
          waitsMs.length === 0
            ? 'no probe'
            : `${waitsMs.length} rows: p50 ${seconds(percentile(waitsMs, 50))}, max ${seconds(Math.max(...waitsMs))}; ` +
              `the first came ${remainingAtProbe.toLocaleString('en')} rows behind, ${seconds((1000 * remainingAtProbe) / drainRate)} at the drain's rate`,
        ],
      ],
    };
  } finally {
    await setup.close();
    await deleteByPrefix(connection, prefix, [sink, probes, exchange]);
    await db.drop();
  }
}

function ratio(comparison: Comparison): number {
  return medianRate(comparison.candidate) / medianRate(comparison.baseline);
}

/** The line the release checks read for a case. */
export function scaleLine(entry: ScaleCase): string {
  return `scale: ${entry.name} large/small ${ratio(entry.comparison).toFixed(2)}x`;
}

function formatScaleTable(cases: readonly ScaleCase[]): string {
  const lines = ['| case | what | measured |', '| --- | --- | --- |'];
  for (const entry of cases) {
    const met = ratio(entry.comparison) >= entry.comparison.target ? 'met' : 'NOT met';
    lines.push(
      `| ${entry.name} | large/small throughput (target ≥ ${entry.comparison.target}x) | ${ratio(entry.comparison).toFixed(2)}x, ${met} |`,
    );
    for (const [what, measured] of entry.facts)
      lines.push(`| ${entry.name} | ${what} | ${measured.replace(/\|/g, '/')} |`);
  }
  return lines.join('\n');
}

/**
 * How the module's costs grow with the work it holds: the inbox with millions of rows, the outbox after a long
 * outage. Each case against the same case at small scale, in the same run; one line per case.
 */
export const scaleSuite: Suite = {
  name: 'scale',
  async run() {
    const prefix = uniquePrefix('scale');
    const connection = await rawConnection(`${prefix}.raw`);
    try {
      const runs: Array<[string, () => Promise<ScaleCase>]> = [
        ['inbox-growth', () => inboxGrowth(prefix, connection)],
        ['outbox-backlog', () => outboxBacklog(prefix, connection)],
      ];
      const cases: ScaleCase[] = [];
      for (const [name, run] of runs)
        if (!SELECTED_CASES || SELECTED_CASES.includes(name)) cases.push(await run());
      for (const entry of cases) console.log(scaleLine(entry));
      return {
        comparisons: cases.map((entry) => entry.comparison),
        latencies: [],
        tables: [formatScaleTable(cases)],
      };
    } finally {
      await connection.close();
    }
  },
};
