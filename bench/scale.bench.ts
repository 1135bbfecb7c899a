import { execFile, spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { promisify } from 'node:util';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import type { DataSource } from 'typeorm';
import { IsString } from 'class-validator';
import {
  Consume,
  HEADERS,
  MessagePublisher,
  MessageType,
  ReliableMessagingModule,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import { Registry } from 'prom-client';
import {
  ConsumerRegistry,
  DEAD_LETTER_HEADERS,
  DEAD_LETTER_QUEUE_SUFFIX,
  InboxPruner,
  OutboxRelay,
} from 'nestjs-reliable-messaging/operations';
import { ClaimCheckPruner, PostgresClaimCheckStore } from 'nestjs-reliable-messaging/claim-check';
import { parseAllDocuments } from 'yaml';
import { BenchOrderPlaced, benchMessage, rawEnvelope } from './bench-message';
import { CommitWatcher, paced, Recorder } from './commit-latency';
import { createBenchDatabase } from './bench-database';
import { prepublish } from './consume.bench';
import {
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  medianRate,
  percentile,
  Progress,
  rate,
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
import { manyConsumersQueue } from './many-consumers-queue';
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
/** Expired inbox rows the prune case deletes (beside as many kept): `BENCH_SCALE_PRUNE_ROWS`, else 1,000,000. */
const PRUNE_ROWS = Number(process.env.BENCH_SCALE_PRUNE_ROWS ?? 1_000_000);
/** Messages a second offered in the prune case, without and during the prune: `BENCH_SCALE_PRUNE_RATE`, else 200. */
const PRUNE_RATE = Number(process.env.BENCH_SCALE_PRUNE_RATE ?? 200);
/** Messages of the prune case's run without a prune: `BENCH_SCALE_QUIET_MESSAGES`, else 20 s' worth. */
const QUIET_MESSAGES = Number(process.env.BENCH_SCALE_QUIET_MESSAGES ?? 20 * PRUNE_RATE);
/** Consumers of the many-consumers case's two apps: `BENCH_SCALE_CONSUMERS`, else `10,200`. */
const CONSUMER_COUNTS = (process.env.BENCH_SCALE_CONSUMERS ?? '10,200').split(',').map(Number);
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
  /** Large over small: throughput for the throughput cases, p99 latency for `prune-under-load`. */
  ratio: number;
  /** What the ratio compares, when not throughput. */
  what?: string;
  /** The target the ratio must meet, and which way. */
  target: { at: number; way: 'at least' | 'at most' };
  /** The throughput runs, for the suite's common table; a latency case has none. */
  comparison?: Comparison;
  facts: Array<[string, string]>;
}

/** A throughput case's ScaleCase: its ratio is the median rates' ratio, its target the comparison's. */
function throughputCase(name: string, comparison: Comparison, facts: Array<[string, string]>): ScaleCase {
  const ratio = medianRate(comparison.candidate) / medianRate(comparison.baseline);
  return { name, ratio, target: { at: comparison.target, way: 'at least' }, comparison, facts };
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
    return throughputCase(
      'inbox-growth',
      {
        suite: 'scale',
        scenario: `inbox-growth: dedup on, quorum queue, ${CONCURRENCY} at once, empty rm_inbox vs ${Number(sizes.n).toLocaleString('en')} rows`,
        ...runs,
        target: 0.9,
      },
      [
        ['filled in', seconds(fillMs)],
        [
          'table, primary key, processed_at index',
          `${mib(Number(sizes.t))}, ${mib(Number(sizes.k))}, ${mib(Number(sizes.p))}`,
        ],
        ['the dedup insert on the large table', plan.replace(/\n\s*/g, '; ')],
      ],
    );
  } finally {
    await deleteByPrefix(connection, prefix, [queues.small, queues.large, exchange]);
    await small.drop();
    await large.drop();
  }
}

/** The inbox's retention in the prune case; its expired rows are a day older. */
const PRUNE_RETENTION_MS = 7 * 86_400_000;

/** A dedup consumer that notes its transaction for `watcher`, which times each message from send to commit. */
function timedConsumerApp(
  exchange: string,
  queue: string,
  dataSource: DataSource,
  watcher: CommitWatcher,
): DynamicModule {
  @Injectable()
  class ScaleConsumer {
    @Consume({ queue, queueType: 'quorum', concurrency: CONCURRENCY, prefetch: CONCURRENCY, dedup: true })
    async onOrderPlaced(event: BenchOrderPlaced, ctx: MessageContext): Promise<void> {
      if (!ctx.manager?.queryRunner) throw new Error('a dedup consumer runs in a transaction');
      watcher.current?.progress.started();
      watcher.open.set(ctx.manager.queryRunner, event.orderId);
    }
  }

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange,
        connectionName: `${queue}.app`,
        dataSource,
        outbox: { relay: false },
        // Its own pruner finds nothing to delete: the prune measured is the pruning app's.
        inbox: { retentionMs: 4 * PRUNE_RETENTION_MS },
      }),
    ],
    providers: [ScaleConsumer],
  })
  class ScaleConsumerModule {}

  return { module: ScaleConsumerModule };
}

/**
 * Pruning under load: PRUNE_ROWS expired inbox rows (beside as many kept) deleted by another app's InboxPruner
 * while a dedup consumer handles PRUNE_RATE messages a second, each timed from its send to its transaction's commit;
 * p99 during the prune against p99 of a run without one. The prune's progress is read from the pruning app's
 * `rm_pruned_rows_total`.
 */
async function pruneUnderLoad(prefix: string, connection: ChannelModel): Promise<ScaleCase> {
  const exchange = `${prefix}.events`;
  const queue = `${prefix}.prune-load`;
  const db = await createBenchDatabase();
  const channel = await connection.createConfirmChannel();
  try {
    const dataSource = await db.connect(CONCURRENCY + 4);
    const watcher = new CommitWatcher();
    dataSource.subscribers.push(watcher);
    const consumerApp = await NestFactory.createApplicationContext(
      timedConsumerApp(exchange, queue, dataSource, watcher),
      { logger: ['error', 'warn'] },
    );
    const registry = new Registry();
    const pruningApp = await bootApp({
      urls: AMQP_URL,
      exchange,
      connectionName: `${prefix}.pruner`,
      dataSource,
      consumersEnabled: false,
      outbox: { relay: false },
      inbox: { retentionMs: PRUNE_RETENTION_MS },
      metricsRegistry: registry,
    });
    try {
      const consumer = consumerApp.get(ConsumerRegistry).consumers[0].name;
      const fillMs = await fill(
        dataSource,
        2 * PRUNE_ROWS,
        `INSERT INTO rm_inbox (consumer, idempotency_key, message_id, message_type, processed_at) ` +
          `SELECT $2, gen_random_uuid()::text, gen_random_uuid()::text, 'bench.order-placed', ` +
          `now() - CASE WHEN n % 2 = 0 THEN interval '8 days' ELSE interval '1 hour' END FROM generate_series(1, $1) n`,
        [consumer],
      );
      await dataSource.query('VACUUM ANALYZE rm_inbox');
      const send = (recorder: Recorder) => async (): Promise<void> => {
        const { body, properties } = randomKeyEnvelope(0);
        recorder.sent(String((properties.headers as Record<string, unknown>)['rm-idempotency-key']));
        channel.sendToQueue(queue, body, properties);
      };

      const quiet = new Recorder(QUIET_MESSAGES);
      watcher.current = quiet;
      await Promise.all([paced(QUIET_MESSAGES, PRUNE_RATE, send(quiet)), quiet.settled()]);

      const during = new Recorder(Number.MAX_SAFE_INTEGER);
      watcher.current = during;
      const started = performance.now();
      let prunedMs: number | undefined;
      const pruning = pruningApp
        .get(InboxPruner)
        .pruneNow()
        .finally(() => (prunedMs = performance.now() - started));
      let sent = 0;
      while (prunedMs === undefined) {
        await send(during)();
        sent++;
        const next = started + (sent * 1000) / PRUNE_RATE - performance.now();
        if (next > 1) await new Promise((resolve) => setTimeout(resolve, next));
      }
      const pruned = await pruning;
      await until(
        () => during.latenciesMs.length >= sent,
        () => during.latenciesMs.length,
      );
      watcher.current = undefined;
      const counted = (await registry.getSingleMetric('rm_pruned_rows_total')?.get())?.values.find(
        (sample) => sample.labels.kind === 'inbox',
      )?.value;
      const p99 = { quiet: percentile(quiet.latenciesMs, 99), during: percentile(during.latenciesMs, 99) };
      const p50 = { quiet: percentile(quiet.latenciesMs, 50), during: percentile(during.latenciesMs, 50) };
      const ms = (value: number): string => `${value.toFixed(1)} ms`;
      return {
        name: 'prune-under-load',
        ratio: p99.during / p99.quiet,
        what: 'during/without the prune, p99 send to commit',
        target: { at: 1.5, way: 'at most' },
        facts: [
          [
            'the inbox written in',
            `${seconds(fillMs)} (${(2 * PRUNE_ROWS).toLocaleString('en')} rows, half expired)`,
          ],
          [
            'the prune',
            `${pruned.toLocaleString('en')} rows in ${seconds(prunedMs ?? 0)}, ` +
              `${Math.round((1000 * pruned) / (prunedMs ?? 1)).toLocaleString('en')} rows/s; rm_pruned_rows_total{kind="inbox"} ${counted ?? 'missing'}`,
          ],
          [
            `send to commit at ${PRUNE_RATE} msgs/s, without / during the prune`,
            `p50 ${ms(p50.quiet)} / ${ms(p50.during)}, p99 ${ms(p99.quiet)} / ${ms(p99.during)} ` +
              `(${quiet.latenciesMs.length} and ${during.latenciesMs.length} messages)`,
          ],
        ],
      };
    } finally {
      dataSource.subscribers.splice(dataSource.subscribers.indexOf(watcher), 1);
      await pruningApp.close();
      await consumerApp.close();
    }
  } finally {
    await channel.close();
    await deleteByPrefix(connection, prefix, [queue, `${queue}.dlq`, exchange]);
    await db.drop();
  }
}

/** What the many-consumers process reports (bench/many-consumers-app.ts). */
interface ManyConsumersReport {
  startupMs: number;
  booted: { rss: number; heapUsed: number };
  channels: number;
  connections: number;
  drain?: { seconds: number; cpuMicros: number; messages: number };
}

/** The module's connections named `<connectionName>:<role>` and their channels, as the broker lists them. */
async function brokerConnections(connectionName: string): Promise<{ connections: number; channels: number }> {
  const { stdout } = await promisify(execFile)('rabbitmqctl', [
    '-q',
    'list_connections',
    'client_properties',
    'channels',
    '--formatter',
    'json',
  ]);
  const listed = JSON.parse(stdout) as Array<{
    client_properties: Array<[string, string, unknown]>;
    channels: number;
  }>;
  const ours = listed.filter((connection) =>
    connection.client_properties.some(
      ([key, , value]) => key === 'connection_name' && String(value).startsWith(`${connectionName}:`),
    ),
  );
  return {
    connections: ours.length,
    channels: ours.reduce((sum, connection) => sum + connection.channels, 0),
  };
}

/**
 * The JSON lines a child process of the suite reports on stdout: `next` takes the first event of a kind, waiting
 * for it if need be, and fails if the process exits before reporting it; `exited` resolves with its exit code.
 */
function childReports(
  child: ChildProcessByStdio<Writable, Readable, null>,
  what: string,
): { next: (event: string) => Promise<Record<string, unknown>>; exited: Promise<number | null> } {
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const reported: Array<Record<string, unknown>> = [];
  let arrived = (): void => undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    reported.push(JSON.parse(line) as Record<string, unknown>);
    arrived();
  });
  const next = async (event: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const found = reported.findIndex((entry) => entry.event === event);
      if (found >= 0) return reported.splice(found, 1)[0];
      const code = await Promise.race([
        exited,
        new Promise<undefined>((resolve) => (arrived = () => resolve(undefined))),
      ]);
      if (code !== undefined && !reported.some((entry) => entry.event === event))
        throw new Error(`${what} exited with ${code} before '${event}'`);
    }
  };
  return { next, exited };
}

/**
 * Runs the many-consumers process with `count` consumers: it boots and reports; with `messages`, they are then
 * published spread over its queues and it reports their drain; the broker's view of its connections is read while
 * it runs; then it is told to stop.
 */
async function runManyConsumers(
  prefix: string,
  count: number,
  connection: ChannelModel,
  messages = 0,
): Promise<ManyConsumersReport> {
  const child = spawn(process.execPath, ['--expose-gc', join(__dirname, 'many-consumers-app.js')], {
    env: {
      ...process.env,
      SCALE_PREFIX: prefix,
      SCALE_CONSUMERS: String(count),
      SCALE_EXPECT: String(messages),
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const { next, exited } = childReports(child, `the many-consumers process (${count})`);
  try {
    const ready = await next('ready');
    const broker = await brokerConnections(`${prefix}.many-${count}`);
    let drain: ManyConsumersReport['drain'];
    if (messages > 0) {
      const channel = await connection.createConfirmChannel();
      for (let n = 0; n < messages; n++) {
        const { body, properties } = rawEnvelope(n);
        if (!channel.sendToQueue(manyConsumersQueue(prefix, count, n % count), body, properties))
          await new Promise((resolve) => channel.once('drain', resolve));
      }
      await channel.waitForConfirms();
      await channel.close();
      drain = (await next('drained')) as unknown as ManyConsumersReport['drain'];
    }
    child.stdin.write('stop\n');
    if ((await exited) !== 0) throw new Error(`the many-consumers process (${count}) failed`);
    return {
      startupMs: Number(ready.startupMs),
      booted: ready.booted as ManyConsumersReport['booted'],
      ...broker,
      drain,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/**
 * Many consumers: one process with CONSUMER_COUNTS[1] `@Consume()` handlers on as many quorum queues against one
 * with CONSUMER_COUNTS[0]: start-up time (first start, which declares the queues, and a later one), RSS after a
 * full GC, the broker's connections and channels, and CPU per message for MESSAGES messages spread over the queues
 * (the same total load). Targets: start-up ≤ 10 s, RSS growth ≤ 1 MiB per consumer.
 */
async function manyConsumers(prefix: string, connection: ChannelModel): Promise<ScaleCase> {
  const [small, large] = CONSUMER_COUNTS;
  const runs: Record<number, { cold: ManyConsumersReport; warm: ManyConsumersReport }> = {};
  try {
    for (const count of [small, large]) {
      const cold = await runManyConsumers(prefix, count, connection);
      const warm = await runManyConsumers(prefix, count, connection, MESSAGES);
      runs[count] = { cold, warm };
    }
  } finally {
    await deleteByPrefix(connection, `${prefix}.many-`, [`${prefix}.events`]);
  }
  const cpu = (count: number): number => {
    const drain = runs[count].warm.drain!;
    return drain.cpuMicros / drain.messages;
  };
  const rssPerConsumer =
    (runs[large].warm.booted.rss - runs[small].warm.booted.rss) / (large - small) / 2 ** 20;
  const slowestStart = Math.max(
    ...[small, large].flatMap((count) => [runs[count].cold.startupMs, runs[count].warm.startupMs]),
  );
  const describe = (count: number): string => {
    const { cold, warm } = runs[count];
    return (
      `start ${seconds(cold.startupMs)} first, ${seconds(warm.startupMs)} after; RSS ${mib(warm.booted.rss)}, ` +
      `heap ${mib(warm.booted.heapUsed)}; ${warm.connections} connections, ${warm.channels} channels; ` +
      `${Math.round(cpu(count))} µs CPU a message`
    );
  };
  return {
    name: 'many-consumers',
    ratio: cpu(large) / cpu(small),
    target: { at: 1.25, way: 'at most' },
    what: 'large/small CPU per message',
    facts: [
      [`${small} consumers`, describe(small)],
      [`${large} consumers`, describe(large)],
      [
        'start-up (target ≤ 10 s)',
        `slowest ${seconds(slowestStart)}: ${slowestStart <= 10_000 ? 'met' : 'NOT met'}`,
      ],
      [
        'RSS per consumer (target ≤ 1 MiB)',
        `${rssPerConsumer.toFixed(2)} MiB: ${rssPerConsumer <= 1 ? 'met' : 'NOT met'}`,
      ],
    ],
  };
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
    return throughputCase(
      'outbox-backlog',
      {
        suite: 'scale',
        scenario: `outbox-backlog: relay, batch ${BATCH}, ${RELAY_CONCURRENCY} rounds at once, quorum queue, ${OUTBOX_SMALL_ROWS.toLocaleString('en')} vs ${OUTBOX_ROWS.toLocaleString('en')} pending rows`,
        ...runs,
        target: 0.8,
      },
      [
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
    );
  } finally {
    await setup.close();
    await deleteByPrefix(connection, prefix, [sink, probes, exchange]);
    await db.drop();
  }
}

/** Dead letters in the dead-letters case's large queue: `BENCH_SCALE_DEAD_LETTERS`, else 100,000. */
const DEAD_LETTERS = Number(process.env.BENCH_SCALE_DEAD_LETTERS ?? 100_000);
/** Dead letters in its small queue: `BENCH_SCALE_DEAD_LETTERS_SMALL`, else 100. */
const DEAD_LETTERS_SMALL = Number(process.env.BENCH_SCALE_DEAD_LETTERS_SMALL ?? 100);
/** What `dlq list` and the API list ask for in the dead-letters case. */
const LIST_LIMIT = 100;
/** The reasons the dead-letters case's dead letters carry, in turn: the console counts them. */
const DEAD_LETTER_REASONS = ['handler-failed', 'retries-exhausted', 'payload-invalid'];

/** The resident set of a running process, now and at its peak, from /proc (Linux). */
async function processMemory(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

/** The memory limit of the app's container in deploy/k8s, in bytes. */
async function podMemoryLimit(): Promise<number> {
  const manifest = await readFile(join(__dirname, '..', '..', 'deploy', 'k8s', 'deployment.yaml'), 'utf8');
  const deployment = parseAllDocuments(manifest)
    .map((document) => document.toJSON() as { kind?: string; spec?: unknown })
    .find((document) => document?.kind === 'Deployment') as
    | {
        spec: { template: { spec: { containers: Array<{ resources?: { limits?: { memory?: string } } }> } } };
      }
    | undefined;
  const limit = deployment?.spec.template.spec.containers[0]?.resources?.limits?.memory ?? '';
  const match = /^(\d+)(Mi|Gi)$/.exec(limit);
  if (!match) throw new Error(`no memory limit in Mi or Gi in deploy/k8s/deployment.yaml (found '${limit}')`);
  return Number(match[1]) * 2 ** (match[2] === 'Gi' ? 30 : 20);
}

/** One `dlq list` run: its wall time, its peak RSS, and how many dead letters it read and listed. */
interface DlqListRun {
  ms: number;
  peakRss: number;
  scanned: number;
  listed: number;
}

/**
 * Runs the admin package's `dlq` bin as an operator runs it in a pod (node, the environment, no app):
 * `list --queue <queue> --limit 100 --json`, timed from spawn to exit (start-up and connections included), its
 * peak RSS reported by the process itself as it exits (bench/peak-rss.ts: `getrusage`'s maximum resident set).
 */
async function dlqList(prefix: string, queue: string): Promise<DlqListRun> {
  const bin = join(__dirname, '..', 'libs', 'reliable-messaging-admin', 'src', 'cli', 'dlq.bin.js');
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--require',
      join(__dirname, 'peak-rss.js'),
      bin,
      'list',
      '--queue',
      queue,
      '--limit',
      String(LIST_LIMIT),
      '--json',
    ],
    {
      env: {
        PATH: process.env.PATH,
        AMQP_URL,
        RM_EXCHANGE: `${prefix}.events`,
        RM_QUEUES: queue,
        RM_CONNECTION_NAME: `${queue}.dlq-bin`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`dlq list exited with ${code}: ${output.stderr}`);
  const result = JSON.parse(output.stdout) as { deadLetters: unknown[]; scanned: number };
  const peakRss = Number(/^peak-rss (\d+)$/m.exec(output.stderr)?.[1]);
  return { ms, peakRss, scanned: result.scanned, listed: result.deadLetters.length };
}

/** Times a GET of `url`, which must answer 200; resolves with the time and the answer's text. */
async function timedGet(url: string): Promise<{ ms: number; text: string }> {
  const started = performance.now();
  const response = await fetch(url);
  const text = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 200)
    throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return { ms, text };
}

/** What the dead-letters case measured on one queue. */
interface DeadLettersSide {
  deadLetters: number;
  writtenMs: number;
  cli: DlqListRun[];
  apiMs: number[];
  apiScanned: number;
  consoleMs: number[];
  reasonsCounted: string;
  /** The serving process's RSS after boot, after the reads, and its peak. */
  server: { before: number; after: number; peak: number };
}

/**
 * Fills the dead-letter queue of a fresh admin app (bench/dead-letters-app.ts) with `count` dead letters and
 * reads it ROUNDS times with each tool: `dlq list` as a child process, the admin API's list, the console's
 * overview.
 */
async function deadLettersSide(
  prefix: string,
  name: string,
  count: number,
  connection: ChannelModel,
): Promise<DeadLettersSide> {
  const queue = `${prefix}.${name}`;
  const deadLetterQueue = `${queue}${DEAD_LETTER_QUEUE_SUFFIX}`;
  const child = spawn(process.execPath, [join(__dirname, 'dead-letters-app.js')], {
    env: { ...process.env, SCALE_PREFIX: prefix, SCALE_QUEUE: queue },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const { next, exited } = childReports(child, `the dead-letters app (${name})`);
  try {
    const { base } = (await next('ready')) as { base: string };
    // As the module dead-letters a message: the message as it was, and the headers it adds (docs/retries-and-dead-letters.md).
    const channel = await connection.createConfirmChannel();
    const started = performance.now();
    for (let n = 0; n < count; n++) {
      const { body, properties } = rawEnvelope(n);
      const failedAt = new Date().toISOString();
      properties.headers = {
        ...(properties.headers as Record<string, unknown>),
        [DEAD_LETTER_HEADERS.reason]: DEAD_LETTER_REASONS[n % DEAD_LETTER_REASONS.length],
        [DEAD_LETTER_HEADERS.errorClass]: 'Error',
        [DEAD_LETTER_HEADERS.errorMessage]: `order ${n} could not be booked: the ledger refused it`,
        [DEAD_LETTER_HEADERS.queue]: queue,
        [DEAD_LETTER_HEADERS.handler]: 'DeadLetteredConsumer.onOrderPlaced',
        [DEAD_LETTER_HEADERS.attempts]: 5,
        [DEAD_LETTER_HEADERS.firstFailureAt]: failedAt,
        [DEAD_LETTER_HEADERS.lastFailureAt]: failedAt,
        [DEAD_LETTER_HEADERS.count]: 1,
      };
      if (!channel.sendToQueue(deadLetterQueue, body, properties))
        await new Promise((resolve) => channel.once('drain', resolve));
    }
    await channel.waitForConfirms();
    // NOTE: a quorum queue's message count lags its confirms by a moment.
    let depth = 0;
    for (;;) {
      depth = (await channel.checkQueue(deadLetterQueue)).messageCount;
      if (depth >= count) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const writtenMs = performance.now() - started;
    await channel.close();

    const before = await processMemory(child.pid!);
    const side: DeadLettersSide = {
      deadLetters: depth,
      writtenMs,
      cli: [],
      apiMs: [],
      apiScanned: 0,
      consoleMs: [],
      reasonsCounted: '',
      server: { before: before.rss, after: 0, peak: 0 },
    };
    for (let round = 0; round < ROUNDS; round++) {
      side.cli.push(await dlqList(prefix, queue));
      const api = await timedGet(`${base}/messages?queue=${encodeURIComponent(queue)}&limit=${LIST_LIMIT}`);
      side.apiMs.push(api.ms);
      side.apiScanned = (JSON.parse(api.text) as { scanned: number }).scanned;
      const overview = await timedGet(`${base}/console`);
      side.consoleMs.push(overview.ms);
      side.reasonsCounted = /\(of the oldest ([\d,]+)/.exec(overview.text)?.[1] ?? 'all';
    }
    const after = await processMemory(child.pid!);
    side.server.after = after.rss;
    side.server.peak = after.peak;
    child.stdin.write('stop\n');
    if ((await exited) !== 0) throw new Error(`the dead-letters app (${name}) failed`);
    return side;
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

const median = (values: readonly number[]): number => percentile(values, 50);
const ms = (value: number): string => `${value.toFixed(0)} ms`;

/**
 * Dead letters: a dead-letter queue holding DEAD_LETTERS against one holding DEAD_LETTERS_SMALL, each read by the
 * three operator tools: `dlq list --limit 100` (a child process: wall time and its peak RSS), the admin API's list
 * of 100 and the console's overview (each timed, the serving app's RSS before and after). The ratio is the CLI
 * list's, large over small; bounded means it does not grow with the queue: at most 2x, room for noise in a time
 * that is mostly the process's start-up.
 */
async function deadLetters(prefix: string, connection: ChannelModel): Promise<ScaleCase> {
  try {
    const small = await deadLettersSide(prefix, 'dl-small', DEAD_LETTERS_SMALL, connection);
    const large = await deadLettersSide(prefix, 'dl-large', DEAD_LETTERS, connection);
    const limit = await podMemoryLimit();
    const cliPeak = (side: DeadLettersSide): number => Math.max(...side.cli.map((run) => run.peakRss));
    const both = (what: (side: DeadLettersSide) => string): string =>
      `${small.deadLetters.toLocaleString('en')}: ${what(small)}; ${large.deadLetters.toLocaleString('en')}: ${what(large)}`;
    const server = (side: DeadLettersSide): string =>
      `server RSS ${mib(side.server.before)} before, ${mib(side.server.after)} after, peak ${mib(side.server.peak)}`;
    const highest = Math.max(cliPeak(small), cliPeak(large), small.server.peak, large.server.peak);
    return {
      name: 'dead-letters',
      ratio: median(large.cli.map((run) => run.ms)) / median(small.cli.map((run) => run.ms)),
      what: `large/small time of \`dlq list --limit ${LIST_LIMIT}\``,
      target: { at: 2, way: 'at most' },
      facts: [
        [
          'the large queue written in',
          `${seconds(large.writtenMs)} (${large.deadLetters.toLocaleString('en')} dead letters, ${DEAD_LETTER_REASONS.length} reasons)`,
        ],
        [
          `\`dlq list --limit ${LIST_LIMIT}\` (a process: start, read, exit)`,
          both(
            (side) =>
              `${ms(median(side.cli.map((run) => run.ms)))}, peak RSS ${mib(cliPeak(side))}, ${side.cli[0].scanned} read, ${side.cli[0].listed} listed`,
          ),
        ],
        [
          `API \`GET messages?limit=${LIST_LIMIT}\``,
          both((side) => `${ms(median(side.apiMs))}, ${side.apiScanned} read; ${server(side)}`),
        ],
        [
          'console overview',
          both((side) => `${ms(median(side.consoleMs))}, reasons counted over ${side.reasonsCounted}`),
        ],
        [
          `RSS against the pod limit (${mib(limit)}, deploy/k8s)`,
          `highest peak ${mib(highest)}, ${((100 * highest) / limit).toFixed(0)}% of it: ${highest <= limit / 2 ? 'within half' : highest <= limit ? 'within' : 'NOT within'}`,
        ],
      ],
    };
  } finally {
    await deleteByPrefix(connection, prefix, [
      `${prefix}.dl-small`,
      `${prefix}.dl-small${DEAD_LETTER_QUEUE_SUFFIX}`,
      `${prefix}.dl-large`,
      `${prefix}.dl-large${DEAD_LETTER_QUEUE_SUFFIX}`,
      `${prefix}.events`,
    ]);
  }
}

/** Bodies in `rm_claim_check` before the claim-check case's prune: `BENCH_SCALE_CLAIM_CHECK_BODIES`, else 100,000. */
const CLAIM_CHECK_BODIES = Number(process.env.BENCH_SCALE_CLAIM_CHECK_BODIES ?? 100_000);
/** The share of them expired: 90%. */
const CLAIM_CHECK_EXPIRED = 0.9;
/**
 * Dead letters referring to expired bodies, which the prune must keep: `BENCH_SCALE_CLAIM_CHECK_DEAD_LETTERS`,
 * else 10,000. The pruner reads them all before each round (its mark phase).
 */
const CLAIM_CHECK_DEAD_LETTERS = Number(process.env.BENCH_SCALE_CLAIM_CHECK_DEAD_LETTERS ?? 10_000);
/** Claim-checked messages published without a prune: `BENCH_SCALE_CLAIM_CHECK_MESSAGES`, else 5,000. */
const CLAIM_CHECK_MESSAGES = Number(process.env.BENCH_SCALE_CLAIM_CHECK_MESSAGES ?? 5_000);
/** Publishers at once in the claim-check case, each awaiting its confirm before the next. */
const CLAIM_CHECK_PUBLISHERS = 8;

/** A dead letter's failure in the claim-check case: its consumer never sees a message of it. */
@MessageType({ type: 'scale.claim-checked-failure' })
class ClaimCheckedFailure {
  @IsString() orderId!: string;
}

/**
 * The claim-check store as it pruned before its batches resumed where the last one stopped: every batch sent the
 * round's kept ids to PostgreSQL and excluded them there (`NOT (id = ANY($3))`), walking past every kept body ahead
 * of it again. A copy of the previous statement, so the case measures both in one run; `previous` picks it.
 */
class PreviousPruneClaimCheckStore extends PostgresClaimCheckStore {
  previous = false;

  constructor(private readonly db: DataSource) {
    super(db);
  }

  override async deleteExpired(
    limit: number,
    now = new Date(),
    keep: ReadonlySet<string> = new Set(),
  ): Promise<number> {
    if (!this.previous) return super.deleteExpired(limit, now, keep);
    const [, count] = await this.db.query<[unknown, number]>(
      `DELETE FROM rm_claim_check WHERE id = ANY(ARRAY(SELECT id FROM rm_claim_check ` +
        `WHERE expires_at <= $1 AND NOT (id = ANY($3::uuid[])) ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [now, limit, [...keep]],
    );
    return count;
  }
}

/** The claim-check case's app: every message claim-checked, and a consumer whose dead letters refer to bodies. */
function claimCheckApp(
  prefix: string,
  queue: string,
  dataSource: DataSource,
  registry: Registry,
  store: PreviousPruneClaimCheckStore,
): DynamicModule {
  @Injectable()
  class ClaimCheckConsumer {
    @Consume({ queue, queueType: 'quorum' })
    async onFailure(_event: ClaimCheckedFailure): Promise<void> {}
  }

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange: `${prefix}.events`,
        connectionName: `${queue}.app`,
        dataSource,
        outbox: { relay: false },
        metricsRegistry: registry,
        // Every body stored; pruned only when the suite says (the longest interval).
        claimCheck: { store, thresholdBytes: 0, pruneIntervalMs: 24 * 3_600_000 },
      }),
    ],
    providers: [ClaimCheckConsumer],
  })
  class ClaimCheckAppModule {}
  return { module: ClaimCheckAppModule };
}

/** One prune of the claim-check case: publishes without it, then during it. */
interface ClaimCheckPrune {
  quiet: Measurement;
  during: Measurement;
  pruned: number;
  /** The rows `rm_pruned_rows_total{kind="claim_check"}` counted during this prune. */
  counted: number;
  prunedMs: number;
  /** From the prune's start to its first batch counted: the mark phase and one batch. */
  firstBatchMs: number;
  /** Of the bodies dead letters refer to, how many were still stored after it. */
  kept: number;
}

/**
 * Claim-check store: CLAIM_CHECK_BODIES bodies of 1 KiB in `rm_claim_check`, 90% expired, CLAIM_CHECK_DEAD_LETTERS
 * of the expired ones referred to by dead letters in the app's dead-letter queue. CLAIM_CHECK_PUBLISHERS
 * publishers send claim-checked messages (`publishNow`: the body stored, then the message sent and confirmed)
 * without a prune, then while the app's ClaimCheckPruner runs: throughput during over without, target ≥ 0.8x (the
 * prune deletes in batches of 1000 and should cost publishers no more than the inbox prune costs consumers). The
 * prune's rate is read from `rm_pruned_rows_total{kind="claim_check"}`; its first batch comes after the mark phase,
 * which reads every dead letter.
 *
 * Twice in one run, on the same store written afresh: first with the previous delete statement (the kept ids
 * sent with every batch, PreviousPruneClaimCheckStore), then with the module's; each against the publishes
 * measured just before it. The store is CHECKPOINTed once written, as two weeks of a real store's life would have
 * done: each page a prune first touches then goes whole into the WAL, as it would in production.
 */
async function claimCheck(prefix: string, connection: ChannelModel): Promise<ScaleCase> {
  const exchange = `${prefix}.events`;
  const queue = `${prefix}.claim-checked`;
  const sink = `${prefix}.claim-check-sink`;
  const db = await createBenchDatabase();
  const setup = await connection.createConfirmChannel();
  try {
    await setup.assertExchange(exchange, 'topic', { durable: true });
    await setup.assertQueue(sink, {
      durable: true,
      arguments: { 'x-queue-type': 'quorum', 'x-max-length': 20_000, 'x-overflow': 'drop-head' },
    });
    await setup.bindQueue(sink, exchange, 'bench.order-placed');
    const dataSource = await db.connect(CLAIM_CHECK_PUBLISHERS + 4);
    const registry = new Registry();
    const store = new PreviousPruneClaimCheckStore(dataSource);
    const app = await NestFactory.createApplicationContext(
      claimCheckApp(prefix, queue, dataSource, registry, store),
      {
        logger: ['error', 'warn'],
      },
    );
    try {
      const expired = Math.round(CLAIM_CHECK_BODIES * CLAIM_CHECK_EXPIRED);
      const referred = Math.min(CLAIM_CHECK_DEAD_LETTERS, expired);
      // The referred bodies' ids are UUID v7, as the store's; the same ids each time the store is written.
      const referredIds = (
        await dataSource.query<Array<{ id: string }>>(
          `SELECT overlay(gen_random_uuid()::text placing '7' from 15 for 1)::uuid AS id FROM generate_series(1, $1)`,
          [referred],
        )
      ).map((row) => row.id);
      // Bodies of 1 KiB (stored inline, uncompressed), created 8 to 15 days ago; the expired ones' expiries spread
      // over the last week, the others' over the next one.
      const body = `convert_to(repeat(md5(n::text), 32), 'UTF8')`;
      const writeStore = async (): Promise<{ ms: number; checkpointed: boolean }> => {
        const started = performance.now();
        await dataSource.query('TRUNCATE rm_claim_check');
        await dataSource.query(
          `INSERT INTO rm_claim_check (id, body, message_type, created_at, expires_at) ` +
            `SELECT id, ${body}, 'bench.order-placed', now() - interval '15 days', now() - random() * interval '7 days' ` +
            `FROM unnest($1::uuid[]) WITH ORDINALITY AS referred(id, n)`,
          [referredIds],
        );
        await fill(
          dataSource,
          expired - referred,
          `INSERT INTO rm_claim_check (id, body, message_type, created_at, expires_at) ` +
            `SELECT gen_random_uuid(), ${body}, 'bench.order-placed', now() - interval '15 days', ` +
            `now() - random() * interval '7 days' FROM generate_series(1, $1) n`,
          [],
        );
        await fill(
          dataSource,
          CLAIM_CHECK_BODIES - expired,
          `INSERT INTO rm_claim_check (id, body, message_type, created_at, expires_at) ` +
            `SELECT gen_random_uuid(), ${body}, 'bench.order-placed', now() - interval '8 days', ` +
            `now() + random() * interval '7 days' FROM generate_series(1, $1) n`,
          [],
        );
        await dataSource.query('VACUUM ANALYZE rm_claim_check');
        const checkpointed = await dataSource.query('CHECKPOINT').then(
          () => true,
          () => false,
        );
        return { ms: performance.now() - started, checkpointed };
      };
      const written = await writeStore();
      for (const [n, id] of referredIds.entries()) {
        const { body: wire, properties } = rawEnvelope(n);
        properties.type = 'scale.claim-checked-failure';
        properties.headers = {
          ...(properties.headers as Record<string, unknown>),
          [HEADERS.claimCheck]: `postgres:${id}`,
          [DEAD_LETTER_HEADERS.claimCheckCopy]: `postgres:${id}`,
          [DEAD_LETTER_HEADERS.reason]: 'handler-failed',
          [DEAD_LETTER_HEADERS.queue]: queue,
          [DEAD_LETTER_HEADERS.lastFailureAt]: new Date().toISOString(),
        };
        if (!setup.sendToQueue(`${queue}${DEAD_LETTER_QUEUE_SUFFIX}`, wire, properties))
          await new Promise((resolve) => setup.once('drain', resolve));
      }
      await setup.waitForConfirms();
      for (;;) {
        const { messageCount } = await setup.checkQueue(`${queue}${DEAD_LETTER_QUEUE_SUFFIX}`);
        if (messageCount >= referred) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const sizeOf = async (): Promise<{ rows: number; bytes: number }> => {
        const [row] = await dataSource.query<Array<{ rows: string; bytes: string }>>(
          `SELECT (SELECT count(*) FROM rm_claim_check) AS rows, pg_total_relation_size('rm_claim_check') AS bytes`,
        );
        return { rows: Number(row.rows), bytes: Number(row.bytes) };
      };
      const sizeBefore = await sizeOf();

      const publisher = app.get(MessagePublisher);
      const pruner = app.get(ClaimCheckPruner);
      /** Publishers sending until `done()` (checked before each message) or `total` messages went. */
      const publish = async (done: () => boolean, total = Number.MAX_SAFE_INTEGER): Promise<Measurement> => {
        let sent = 0;
        const end = startRun(0);
        await Promise.all(
          Array.from({ length: CLAIM_CHECK_PUBLISHERS }, async () => {
            while (!done() && sent < total) {
              sent++;
              await publisher.publishNow(Object.assign(benchMessage(sent), { orderId: randomUUID() }));
            }
          }),
        );
        return { ...end(), messages: sent };
      };
      const counted = async (): Promise<number> =>
        (await registry.getSingleMetric('rm_pruned_rows_total')?.get())?.values.find(
          (sample) => sample.labels.kind === 'claim_check',
        )?.value ?? 0;
      const prune = async (previous: boolean): Promise<ClaimCheckPrune> => {
        store.previous = previous;
        const quiet = await publish(() => false, CLAIM_CHECK_MESSAGES);
        const countedBefore = await counted();
        const started = performance.now();
        let prunedMs: number | undefined;
        let firstBatchMs: number | undefined;
        const pruning = pruner.pruneNow().finally(() => (prunedMs = performance.now() - started));
        const watching = (async () => {
          while (prunedMs === undefined && firstBatchMs === undefined) {
            if ((await counted()) > countedBefore) firstBatchMs = performance.now() - started;
            else await new Promise((resolve) => setTimeout(resolve, 20));
          }
        })();
        const during = await publish(() => prunedMs !== undefined);
        const pruned = await pruning;
        await watching;
        const [{ n: kept }] = await dataSource.query<Array<{ n: string }>>(
          `SELECT count(*) AS n FROM rm_claim_check WHERE id = ANY($1::uuid[])`,
          [referredIds],
        );
        return {
          quiet,
          during,
          pruned,
          counted: (await counted()) - countedBefore,
          prunedMs: prunedMs ?? 0,
          firstBatchMs: firstBatchMs ?? 0,
          kept: Number(kept),
        };
      };
      // Unmeasured: the first publishes of a process are slower (compilation, the pool's connections), and would
      // make the first prune's baseline low.
      await publish(() => false, CLAIM_CHECK_MESSAGES);
      const before = await prune(true);
      await writeStore();
      const after = await prune(false);
      const sizeAfter = await sizeOf();
      const ratioOf = (side: ClaimCheckPrune): number => rate(side.during) / rate(side.quiet);
      const publishes = (side: ClaimCheckPrune): string =>
        `${Math.round(rate(side.quiet))} / ${Math.round(rate(side.during))} msgs/s (${side.quiet.messages} and ${side.during.messages} messages), ${ratioOf(side).toFixed(2)}x`;
      const prunedFact = (side: ClaimCheckPrune): string => {
        const deleteMs = side.prunedMs - side.firstBatchMs;
        return (
          `${side.pruned.toLocaleString('en')} bodies in ${seconds(side.prunedMs)}: the mark phase and first batch ${seconds(side.firstBatchMs)} ` +
          `(${referred.toLocaleString('en')} dead letters read), then ${Math.round((1000 * side.pruned) / Math.max(deleteMs, 1)).toLocaleString('en')} rows/s; ` +
          `rm_pruned_rows_total{kind="claim_check"} ${side.counted}; ${side.kept} of the ${referred} referred bodies kept`
        );
      };
      return {
        name: 'claim-check',
        ratio: ratioOf(after),
        what: 'during/without the prune, claim-checked publish throughput',
        target: { at: 0.8, way: 'at least' },
        comparison: {
          suite: 'scale',
          scenario: `claim-check: ${CLAIM_CHECK_PUBLISHERS} publishers, publishNow of claim-checked messages, without vs during a prune of ${sizeBefore.rows.toLocaleString('en')} stored bodies`,
          baseline: [after.quiet],
          candidate: [after.during],
          target: 0.8,
        },
        facts: [
          [
            'the store written in',
            `${seconds(written.ms)} (${sizeBefore.rows.toLocaleString('en')} bodies of 1 KiB, ${expired.toLocaleString('en')} expired, ${referred.toLocaleString('en')} of these referred to by dead letters; ` +
              `${written.checkpointed ? 'then a CHECKPOINT' : 'no CHECKPOINT (not permitted)'}), and again for the second prune`,
          ],
          ['before: claim-checked publishes, without / during the prune', publishes(before)],
          ['before: the prune (the kept ids sent with every batch)', prunedFact(before)],
          ['claim-checked publishes, without / during the prune', publishes(after)],
          ['the prune', prunedFact(after)],
          [
            'the store, before / after the prune',
            `${sizeBefore.rows.toLocaleString('en')} bodies, ${mib(sizeBefore.bytes)} / ${sizeAfter.rows.toLocaleString('en')} bodies, ${mib(sizeAfter.bytes)} (table and indexes, before a VACUUM)`,
          ],
        ],
      };
    } finally {
      await app.close();
    }
  } finally {
    await setup.close();
    await deleteByPrefix(connection, prefix, [queue, `${queue}${DEAD_LETTER_QUEUE_SUFFIX}`, sink, exchange]);
    await db.drop();
  }
}

/** The line the release checks read for a case. */
export function scaleLine(entry: ScaleCase): string {
  return `scale: ${entry.name} large/small ${entry.ratio.toFixed(2)}x`;
}

function met(entry: ScaleCase): boolean {
  return entry.target.way === 'at least' ? entry.ratio >= entry.target.at : entry.ratio <= entry.target.at;
}

function formatScaleTable(cases: readonly ScaleCase[]): string {
  const lines = ['| case | what | measured |', '| --- | --- | --- |'];
  for (const entry of cases) {
    const what = entry.what ?? 'large/small throughput';
    const target = `${entry.target.way === 'at least' ? '≥' : '≤'} ${entry.target.at}x`;
    lines.push(
      `| ${entry.name} | ${what} (target ${target}) | ${entry.ratio.toFixed(2)}x, ${met(entry) ? 'met' : 'NOT met'} |`,
    );
    for (const [fact, measured] of entry.facts)
      lines.push(`| ${entry.name} | ${fact} | ${measured.replace(/\|/g, '/')} |`);
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
        ['prune-under-load', () => pruneUnderLoad(prefix, connection)],
        ['outbox-backlog', () => outboxBacklog(prefix, connection)],
        ['many-consumers', () => manyConsumers(prefix, connection)],
        ['dead-letters', () => deadLetters(prefix, connection)],
        ['claim-check', () => claimCheck(prefix, connection)],
      ];
      const cases: ScaleCase[] = [];
      for (const [name, run] of runs)
        if (!SELECTED_CASES || SELECTED_CASES.includes(name)) cases.push(await run());
      for (const entry of cases) console.log(scaleLine(entry));
      return {
        comparisons: cases.flatMap((entry) => (entry.comparison ? [entry.comparison] : [])),
        latencies: [],
        tables: [formatScaleTable(cases)],
      };
    } finally {
      await connection.close();
    }
  },
};
