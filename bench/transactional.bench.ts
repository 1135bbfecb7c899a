import { Injectable, Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import {
  Consume,
  MessagePublisher,
  ReliableMessagingModule,
  type MessageContext,
  type ReliableMessagingModuleOptions,
} from 'nestjs-reliable-messaging';
import { ConsumerRegistry, OutboxRelay as ModuleRelay } from 'nestjs-reliable-messaging/operations';
import { BenchOrderPlaced, benchMessage, rawEnvelope } from './bench-message';
import { createBenchDatabase, type BenchDatabase } from './bench-database';
import { prepublish } from './consume.bench';
import { HAND_WRITTEN_TABLES, OUTBOX_INSERT } from './hand-written/hand-written-schema';
import { ORDER_FLOW_TABLES } from './hand-written/order-flow/order-flow-schema';
import { inTransaction } from './hand-written/in-transaction';
import { OutboxRelay as HandWrittenRelay } from './hand-written/outbox-relay';
import {
  TransactionalConsumer,
  type DecodedMessage,
  type TransactionalWork,
} from './hand-written/transactional-consumer';
import {
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  rawConnection,
  ROUNDS,
  startRun,
  uniquePrefix,
  until,
  type Comparison,
  type Measurement,
  type Suite,
} from './harness';
import {
  comparisonLine,
  formatTransactionalTable,
  report,
  targetsOf,
  type TransactionalCase,
} from './transactional-report';
import { orderFlowCase } from './transactional-order-flow';
import { whileProfiled } from './cpu-profile';
import { CommitWatcher, paced, Recorder } from './commit-latency';

/** Transactions at once (prefetch and handlers) of both consumers: `BENCH_PREFETCH`, else 20. */
const CONCURRENCY = Number(process.env.BENCH_PREFETCH ?? 20);
/** Both relays' batch size and rounds at once: the module's defaults. */
const BATCH = 200;
const RELAY_WORKERS = 2;
/** How often an idle relay looks for rows unless woken: the module's default. */
const POLL_MS = 1000;
/** Ordering keys of the keyed relay case. */
const KEYS = 100;
/** The offered load of the latency runs, and how many messages each sends. */
const LATENCY_RATE = Number(process.env.BENCH_TX_LATENCY_RATE ?? 200);
const LATENCY_MESSAGES = Number(
  process.env.BENCH_TX_LATENCY_MESSAGES ?? Math.min(MESSAGES, 2 * LATENCY_RATE),
);
/** The cases to run: `BENCH_TX_CASES=inbox-only,relay-100-keys` picks some (for a profile, say); all by default. */
const SELECTED_CASES = process.env.BENCH_TX_CASES?.split(',').map((name) => name.trim());
/** How long a run may handle nothing before the suite gives up on it: `BENCH_TX_STALL_MS`, else 60 s. */
const STALL_MS = Number(process.env.BENCH_TX_STALL_MS ?? 60_000);
/** The routing key every message goes out with (the message type). */
const ROUTING_KEY = 'bench.order-placed';

/** The business tables: one counter row per customer the messages name. */
const BUSINESS_TABLES = [
  'CREATE TABLE customers (id text PRIMARY KEY, order_count int NOT NULL DEFAULT 0, total_cents bigint NOT NULL DEFAULT 0)',
  `INSERT INTO customers (id) SELECT 'customer-' || n FROM generate_series(0, 96) AS n`,
];
const BUSINESS_UPDATE =
  'UPDATE customers SET order_count = order_count + 1, total_cents = total_cents + $2 WHERE id = $1';

/** The messages of a case: what a consumer's transaction writes besides its inbox row. */
type ConsumerCase = 'inbox-only' | 'consume-update-outbox';

/** The module's side of a consumer case: a dedup consumer whose handler does the case's work in its transaction. */
function moduleConsumerApp(
  kind: ConsumerCase,
  exchange: string,
  queue: string,
  dataSource: DataSource,
  watcher: CommitWatcher,
): DynamicModule {
  @Injectable()
  class BenchTransactionalConsumer {
    constructor(private readonly publisher: MessagePublisher) {}

    @Consume({ queue, queueType: 'quorum', concurrency: CONCURRENCY, prefetch: CONCURRENCY, dedup: true })
    async onOrderPlaced(event: BenchOrderPlaced, ctx: MessageContext): Promise<void> {
      const manager = ctx.manager;
      if (!manager?.queryRunner) throw new Error('a dedup consumer runs in a transaction');
      watcher.current?.progress.started();
      watcher.open.set(manager.queryRunner, event.orderId);
      if (kind === 'inbox-only') return;
      await manager.query(BUSINESS_UPDATE, [event.customerId, event.totalCents]);
      await this.publisher.publish(event, { manager });
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
      }),
    ],
    providers: [BenchTransactionalConsumer],
  })
  class BenchTransactionalModule {}

  return { module: BenchTransactionalModule };
}

/** The hand-written side's work: nothing, or the business update and one outbox row, in the message's transaction. */
function handWrittenWork(
  kind: ConsumerCase,
  exchange: string,
  recorder: () => Recorder | undefined,
): TransactionalWork {
  return async (client, message) => {
    recorder()?.progress.started();
    if (kind === 'inbox-only') return;
    const { customerId, totalCents } = message.body;
    if (typeof customerId !== 'string' || !Number.isInteger(totalCents)) {
      throw new Error(`message ${message.messageId} has no customerId or totalCents`);
    }
    await client.query({
      name: 'hw_business_update',
      text: BUSINESS_UPDATE,
      values: [customerId, totalCents],
    });
    const { body, properties } = outgoing(message);
    await client.query({
      name: 'hw_outbox_insert',
      text: OUTBOX_INSERT,
      values: [properties.messageId, exchange, ROUTING_KEY, JSON.stringify(properties), body, null],
    });
  };
}

/** The event a handled message causes, with the envelope the module would give it (same body, same headers). */
function outgoing(message: DecodedMessage): ReturnType<typeof rawEnvelope> {
  const envelope = rawEnvelope(0);
  const headers = envelope.properties.headers as Record<string, unknown>;
  headers['rm-idempotency-key'] = message.idempotencyKey;
  headers['rm-causation-id'] = message.messageId;
  return { body: Buffer.from(JSON.stringify(message.body)), properties: envelope.properties };
}

/** Truncates every table the runs write, so each run starts from the same state. */
async function resetTables(dataSource: DataSource): Promise<void> {
  await dataSource.query('TRUNCATE rm_inbox, rm_outbox, hw_inbox, hw_outbox');
}

/** Rows of a table the checks count. */
async function count(dataSource: DataSource, sql: string): Promise<number> {
  const [row] = await dataSource.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM ${sql}`);
  return row.n;
}

/**
 * A consumer case: the same pre-published messages drained by the module's dedup consumer and by the
 * hand-written one (throughput, CPU), then messages sent at LATENCY_RATE (send to commit), rounds alternated.
 */
async function consumerCase(
  kind: ConsumerCase,
  scenario: string,
  db: BenchDatabase,
  dataSource: DataSource,
  connection: ChannelModel,
  prefix: string,
): Promise<TransactionalCase> {
  const exchange = `${prefix}.events`;
  const moduleQueue = `${prefix}.${kind}.module`;
  const handQueue = `${prefix}.${kind}.hand-written`;
  const watcher = new CommitWatcher();
  dataSource.subscribers.push(watcher);
  const app = moduleConsumerApp(kind, exchange, moduleQueue, dataSource, watcher);
  const pool = new pg.Pool({ connectionString: db.url, max: CONCURRENCY });
  // Its own connection, as the module's consumer has: deliveries and acks do not share a socket with the load.
  const consumerConnection = await rawConnection(`${handQueue}.consumer`);
  let current: Recorder | undefined;
  const result: TransactionalCase = {
    name: kind,
    scenario,
    handWritten: { runs: [], latenciesMs: [] },
    module: { runs: [], latenciesMs: [] },
  };
  try {
    // A first boot declares the module's queue; the hand-written one gets the same arguments, so the broker
    // does the same work for both (quorum, delivery limit, dead-lettering).
    const setup = await boot(app);
    const declared = setup.get(ConsumerRegistry).consumers[0].queueArguments;
    await setup.close();
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(handQueue, {
      durable: true,
      arguments: { ...declared, 'x-dead-letter-routing-key': handQueue },
    });

    const handWritten = async (recorder: Recorder, load: () => Promise<void>): Promise<void> => {
      current = recorder;
      const consumer = new TransactionalConsumer({
        connection: consumerConnection,
        pool,
        queue: handQueue,
        consumer: handQueue,
        prefetch: CONCURRENCY,
        work: handWrittenWork(kind, exchange, () => current),
        handled: (message) => current?.handled(message.idempotencyKey),
      });
      await consumer.start();
      await Promise.all([load(), recorder.settled()]);
      await consumer.stop();
      current = undefined;
    };
    const byModule = async (recorder: Recorder, load: () => Promise<void>): Promise<void> => {
      watcher.current = recorder;
      const context = await boot(app);
      await Promise.all([load(), recorder.settled()]);
      await context.close();
      watcher.current = undefined;
    };
    const check = async (
      round: number,
      who: 'module' | 'hand-written',
      recorder: Recorder,
    ): Promise<void> => {
      const [inbox, outbox] = who === 'module' ? ['rm_inbox', 'rm_outbox'] : ['hw_inbox', 'hw_outbox'];
      const inboxRows = await count(dataSource, inbox);
      const outboxRows = await count(dataSource, outbox);
      const wantOutbox = kind === 'inbox-only' ? 0 : recorder.expected;
      report({
        name: kind,
        round,
        who,
        handled: recorder.progress.count,
        of: recorder.expected,
        rows: `${inboxRows} inbox rows, ${outboxRows} outbox rows`,
        ok: inboxRows === recorder.expected && outboxRows === wantOutbox,
      });
    };

    for (let round = 1; round <= ROUNDS; round++) {
      for (const [who, run, queue, into] of [
        ['hand-written', handWritten, handQueue, result.handWritten],
        ['module', byModule, moduleQueue, result.module],
      ] as const) {
        await resetTables(dataSource);
        await prepublish(connection, queue, MESSAGES);
        const drained = new Recorder(MESSAGES, STALL_MS);
        await whileProfiled(`${kind}-${who}-round${round}`, () => run(drained, async () => undefined));
        into.runs.push(drained.progress.measurement());
        await check(round, who, drained);

        await resetTables(dataSource);
        const timed = new Recorder(LATENCY_MESSAGES, STALL_MS);
        await run(timed, () =>
          paced(LATENCY_MESSAGES, LATENCY_RATE, async (n) => {
            const { body, properties } = rawEnvelope(n);
            timed.sent(`order-${n}`);
            channel.sendToQueue(queue, body, properties);
          }),
        );
        into.latenciesMs.push(...timed.latenciesMs);
      }
    }
    await channel.waitForConfirms();
    await channel.close();
    return result;
  } finally {
    dataSource.subscribers.splice(dataSource.subscribers.indexOf(watcher), 1);
    await consumerConnection.close();
    await pool.end();
    await resetTables(dataSource);
  }
}

function boot(module: DynamicModule | ReliableMessagingModuleOptions): Promise<INestApplicationContext> {
  if ('module' in module) return NestFactory.createApplicationContext(module, { logger: ['error', 'warn'] });
  @Module({ imports: [ReliableMessagingModule.forRoot(module)] })
  class BenchRelayModule {}
  return NestFactory.createApplicationContext(BenchRelayModule, { logger: ['error', 'warn'] });
}

/**
 * A relay case: MESSAGES rows committed at once, relayed to a quorum queue by the module's relay and by the
 * hand-written one (throughput, CPU: from the commit to the last row marked), then one row per transaction at
 * LATENCY_RATE (commit to arrival at a consumer), rounds alternated.
 */
async function relayCase(
  keys: number,
  db: BenchDatabase,
  dataSource: DataSource,
  connection: ChannelModel,
  prefix: string,
): Promise<TransactionalCase> {
  const name = keys > 0 ? `relay-${keys}-keys` : 'relay-no-keys';
  const exchange = `${prefix}.events`;
  const sink = `${prefix}.${name}.sink`;
  const orderingKey = (n: number): string | undefined => (keys > 0 ? `key-${n % keys}` : undefined);
  const setup = await connection.createChannel();
  await setup.assertExchange(exchange, 'topic', { durable: true });
  await setup.assertQueue(sink, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await setup.bindQueue(sink, exchange, ROUTING_KEY);
  const pool = new pg.Pool({ connectionString: db.url, max: RELAY_WORKERS + 2 });
  const handRelay = new HandWrittenRelay({
    pool,
    connection,
    batchSize: BATCH,
    workers: RELAY_WORKERS,
    pollMs: POLL_MS,
  });
  const relaySource = await db.connect(RELAY_WORKERS + 4);
  const app = await boot({
    urls: AMQP_URL,
    exchange,
    connectionName: `${prefix}.${name}.relay`,
    dataSource: relaySource,
    consumersEnabled: false,
    outbox: {
      batchSize: BATCH,
      concurrency: RELAY_WORKERS,
      pollIntervalMs: POLL_MS,
      retentionMs: 0,
      pruneIntervalMs: 3_600_000,
    },
  });
  const moduleRelay = app.get(ModuleRelay);
  const publisher = app.get(MessagePublisher);
  const result: TransactionalCase = {
    name,
    scenario: `${keys > 0 ? `${keys} ordering keys` : 'no ordering key'}, batch ${BATCH}, ${RELAY_WORKERS} rounds at once, quorum queue`,
    handWritten: { runs: [], latenciesMs: [] },
    module: { runs: [], latenciesMs: [] },
  };
  handRelay.start();
  try {
    // One outbox row's values, the same for both sides.
    const rowOf = (n: number): unknown[] => {
      const { body, properties } = rawEnvelope(n);
      return [
        properties.messageId,
        exchange,
        ROUTING_KEY,
        JSON.stringify(properties),
        body,
        orderingKey(n) ?? null,
      ];
    };
    // The backlog of a throughput run: MESSAGES rows in one statement, as a service writing one message per
    // transaction leaves them. Written through publish() in one transaction instead, the module's rows without a key
    // would share one (a transaction's messages go out in their order; see docs/outbox-and-inbox.md), and the run would
    // measure one key's rows.
    const fill = async (table: 'hw_outbox' | 'rm_outbox', total: number): Promise<void> => {
      const columns: unknown[][] = [[], [], [], [], [], []];
      for (let n = 0; n < total; n++) rowOf(n).forEach((value, column) => columns[column].push(value));
      await pool.query(
        `INSERT INTO ${table} (message_id, exchange, routing_key, properties, body, ordering_key) ` +
          'SELECT m, e, r, p, b, k FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::bytea[], $6::text[]) ' +
          'WITH ORDINALITY AS batch (m, e, r, p, b, k, position) ORDER BY position',
        columns,
      );
    };
    // The rows of a latency run: one per transaction, each written as its side writes it.
    const commitByHand = async (n: number): Promise<void> => {
      await inTransaction(pool, (client) =>
        client.query({ name: 'hw_outbox_insert', text: OUTBOX_INSERT, values: rowOf(n) }),
      );
      handRelay.wake();
    };
    const commitByModule = async (n: number): Promise<void> => {
      await relaySource.transaction(async (manager) => {
        await publisher.publish(benchMessage(n), { manager, orderingKey: orderingKey(n) });
      });
    };
    const subjects = [
      {
        who: 'hand-written',
        fill: () => fill('hw_outbox', MESSAGES).then(() => handRelay.wake()),
        commit: commitByHand,
        published: () => handRelay.published,
        into: result.handWritten,
        table: 'hw_outbox',
      },
      {
        who: 'module',
        fill: () => fill('rm_outbox', MESSAGES).then(() => moduleRelay.wake()),
        commit: commitByModule,
        published: () => moduleRelay.stats.published,
        into: result.module,
        table: 'rm_outbox',
      },
    ] as const;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const subject of subjects) {
        await resetTables(dataSource);
        const before = subject.published();
        await subject.fill();
        const measurement: Measurement = await whileProfiled(
          `${name}-${subject.who}-round${round}`,
          async () => {
            const end = startRun(MESSAGES);
            await until(() => subject.published() >= before + MESSAGES, subject.published, STALL_MS);
            return end();
          },
        );
        subject.into.runs.push(measurement);
        const { messageCount } = await setup.checkQueue(sink);
        const pending = await count(dataSource, `${subject.table} WHERE status = 'pending'`);
        report({
          name,
          round,
          who: subject.who,
          handled: subject.published() - before,
          of: MESSAGES,
          rows: `${messageCount} in the queue, ${pending} rows pending`,
          ok: messageCount === MESSAGES && pending === 0,
        });
        await setup.purgeQueue(sink);
        subject.into.latenciesMs.push(...(await relayLatency(connection, sink, subject.commit)));
        await setup.purgeQueue(sink);
      }
    }
    return result;
  } finally {
    await handRelay.stop();
    await app.close();
    await pool.end();
    await setup.close();
    await resetTables(dataSource);
  }
}

/**
 * Commit-to-arrival latency: one row per transaction (`commit(n)`) at LATENCY_RATE, each timed from its commit returning to its
 * arrival on a consumer of the sink. A message may arrive before its writer's await returns: latency 0.
 */
async function relayLatency(
  connection: ChannelModel,
  sink: string,
  commit: (n: number) => Promise<void>,
): Promise<number[]> {
  const recorder = new Recorder(LATENCY_MESSAGES, STALL_MS);
  const arrivedFirst = new Set<string>();
  const committed = new Set<string>();
  const channel = await connection.createChannel();
  const { consumerTag } = await channel.consume(
    sink,
    (message) => {
      const key: unknown = message?.properties.headers?.['rm-idempotency-key'];
      if (typeof key !== 'string') return;
      if (committed.delete(key)) recorder.handled(key);
      else arrivedFirst.add(key);
    },
    { noAck: true },
  );
  await paced(LATENCY_MESSAGES, LATENCY_RATE, async (n) => {
    const key = `order-${n}`;
    await commit(n);
    if (arrivedFirst.delete(key)) {
      recorder.latenciesMs.push(0);
      recorder.progress.completed();
    } else {
      committed.add(key);
      recorder.sent(key);
    }
  });
  await recorder.settled();
  await channel.cancel(consumerTag);
  await channel.close();
  return recorder.latenciesMs;
}

/**
 * The transactional path against the minimal correct code a careful team writes by hand with `pg` and
 * `amqplib` (bench/hand-written/): inbox-only consumption, consume → business update → one outbox row, the relay
 * without and with ordering keys (same tables, indexes, messages, prefetch, batch and confirms), and the order
 * app end to end against a hand-written order service (transactional-order-flow.ts). Rounds alternated; one
 * comparison line per case.
 */
export const transactionalSuite: Suite = {
  name: 'transactional',
  async run() {
    const prefix = uniquePrefix('tx');
    const db = await createBenchDatabase([...HAND_WRITTEN_TABLES, ...BUSINESS_TABLES, ...ORDER_FLOW_TABLES]);
    const connection = await rawConnection(`${prefix}.raw`);
    try {
      const dataSource = await db.connect(CONCURRENCY + 2);
      const runs: Array<[string, () => Promise<TransactionalCase>]> = [
        [
          'inbox-only',
          () =>
            consumerCase(
              'inbox-only',
              `quorum queue, prefetch ${CONCURRENCY}, the inbox row alone`,
              db,
              dataSource,
              connection,
              prefix,
            ),
        ],
        [
          'consume-update-outbox',
          () =>
            consumerCase(
              'consume-update-outbox',
              `quorum queue, prefetch ${CONCURRENCY}, inbox row, a customer's counter, one outbox row`,
              db,
              dataSource,
              connection,
              prefix,
            ),
        ],
        ['relay-no-keys', () => relayCase(0, db, dataSource, connection, prefix)],
        [`relay-${KEYS}-keys`, () => relayCase(KEYS, db, dataSource, connection, prefix)],
        ['order-flow', () => orderFlowCase(db, connection, prefix)],
      ];
      const cases: TransactionalCase[] = [];
      for (const [name, run] of runs)
        if (!SELECTED_CASES || SELECTED_CASES.includes(name)) cases.push(await run());
      for (const entry of cases) console.log(comparisonLine(entry));
      const comparisons: Comparison[] = cases.map((entry) => ({
        suite: 'transactional',
        scenario: `${entry.name}: ${entry.scenario}, hand-written vs module`,
        baseline: entry.handWritten.runs,
        candidate: entry.module.runs,
        target: targetsOf(entry).throughput,
      }));
      return { comparisons, latencies: [], tables: [formatTransactionalTable(cases)] };
    } finally {
      const queues = ['inbox-only', 'consume-update-outbox'].flatMap((kind) => [
        `${prefix}.${kind}.module`,
        `${prefix}.${kind}.module.dlq`,
        `${prefix}.${kind}.hand-written`,
      ]);
      const sinks = ['relay-no-keys', `relay-${KEYS}-keys`].map((name) => `${prefix}.${name}.sink`);
      await deleteByPrefix(connection, prefix, [...queues, ...sinks, `${prefix}.events`]);
      await connection.close();
      await db.drop();
    }
  },
};
