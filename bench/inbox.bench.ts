import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { Consume, ReliableMessagingModule, type MessageContext } from 'nestjs-reliable-messaging';
import { BenchOrderPlaced } from './bench-message';
import { createBenchDatabase } from './bench-database';
import { prepublish } from './consume.bench';
import {
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  Progress,
  rawConnection,
  ROUNDS,
  startRun,
  uniquePrefix,
  type Measurement,
  type Suite,
} from './harness';

/** Handlers running at once (and the prefetch) of both consumers; the pool has a connection for each. */
const CONCURRENCY = Number(process.env.BENCH_PREFETCH ?? 20);

/** An app whose one consumer does no work of its own, with dedup on or off, on `dataSource`. */
export function consumerApp(
  exchange: string,
  queue: string,
  dedup: boolean,
  dataSource: DataSource,
  progress: { current?: Progress },
): DynamicModule {
  @Injectable()
  class BenchConsumer {
    @Consume({ queue, queueType: 'quorum', concurrency: CONCURRENCY, prefetch: CONCURRENCY, dedup })
    async onOrderPlaced(_event: BenchOrderPlaced, _ctx: MessageContext): Promise<void> {
      progress.current?.started();
      progress.current?.completed();
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
    providers: [BenchConsumer],
  })
  class BenchInboxModule {}

  return { module: BenchInboxModule };
}

export async function drain(app: DynamicModule, progress: { current?: Progress }): Promise<Measurement> {
  progress.current = new Progress(MESSAGES);
  const context = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
  await progress.current.finished;
  const measurement = progress.current.measurement();
  await context.close();
  return measurement;
}

/** The statement the module's inbox runs for every message (inbox/inbox-store.service.ts). */
const INBOX_INSERT =
  'INSERT INTO "rm_inbox" ("consumer", "idempotency_key", "message_id", "message_type") VALUES ($1, $2, $3, $4) ' +
  'ON CONFLICT DO NOTHING';

/**
 * PostgreSQL's commit ceiling on this machine: MESSAGES single-row inserts of the inbox's own statement into the
 * inbox table, each committed on its own, from CONCURRENCY clients of a plain pg.Pool (no TypeORM, no broker).
 * `transaction` sends BEGIN, the INSERT and COMMIT (three round trips, as any handler's transaction needs);
 * otherwise the INSERT commits by itself (one round trip).
 */
async function commitCeiling(url: string, transaction: boolean): Promise<Measurement> {
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY });
  try {
    const clients = await Promise.all(Array.from({ length: CONCURRENCY }, () => pool.connect()));
    let next = 0;
    const end = startRun(MESSAGES);
    await Promise.all(
      clients.map(async (client) => {
        for (let n = next++; n < MESSAGES; n = next++) {
          const values = ['ceiling', `order-${n}`, `message-${n}`, 'bench.order-placed'];
          if (transaction) await client.query('BEGIN');
          await client.query({ name: 'ceiling_insert', text: INBOX_INSERT, values });
          if (transaction) await client.query('COMMIT');
        }
      }),
    );
    const measurement = end();
    for (const client of clients) client.release();
    return measurement;
  } finally {
    await pool.end();
  }
}

/**
 * Consume throughput with the inbox against without it: the same pre-published messages drained by the same
 * module consumer, once with `dedup: false` and once with `dedup: true` (a transaction with the inbox row
 * around every handler). Both on quorum queues and one DataSource.
 */
export const inboxSuite: Suite = {
  name: 'inbox',
  async run() {
    const prefix = uniquePrefix('inbox');
    const exchange = `${prefix}.events`;
    const plainQueue = `${prefix}.plain`;
    const dedupQueue = `${prefix}.dedup`;
    const db = await createBenchDatabase();
    const connection = await rawConnection(`${prefix}.raw`);
    const progress: { current?: Progress } = {};
    try {
      const dataSource = await db.connect(CONCURRENCY + 2);
      const plain = consumerApp(exchange, plainQueue, false, dataSource, progress);
      const dedup = consumerApp(exchange, dedupQueue, true, dataSource, progress);
      // A first boot of each app declares its queue, so the messages published before each run have a home.
      for (const app of [plain, dedup]) {
        await (await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] })).close();
      }
      const runs = { plain: [] as Measurement[], dedup: [] as Measurement[], ceiling: [] as Measurement[] };
      const autocommit: Measurement[] = [];
      // Alternated, so that drift of the machine weighs on every subject alike.
      for (let round = 0; round < ROUNDS; round++) {
        await prepublish(connection, plainQueue, MESSAGES);
        runs.plain.push(await drain(plain, progress));
        await prepublish(connection, dedupQueue, MESSAGES);
        runs.dedup.push(await drain(dedup, progress));
        await dataSource.query('TRUNCATE rm_inbox');
        runs.ceiling.push(await commitCeiling(db.url, true));
        await dataSource.query('TRUNCATE rm_inbox');
        autocommit.push(await commitCeiling(db.url, false));
        await dataSource.query('TRUNCATE rm_inbox');
      }
      return [
        {
          suite: 'inbox',
          scenario: `quorum queue, ${CONCURRENCY} handlers at once: dedup off vs dedup on`,
          baseline: runs.plain,
          candidate: runs.dedup,
          target: 0,
        },
        {
          suite: 'inbox',
          scenario: `commit ceiling (pg.Pool, ${CONCURRENCY} clients, BEGIN; INSERT; COMMIT) vs dedup on`,
          baseline: runs.ceiling,
          candidate: runs.dedup,
          target: 0.5,
          maxCpuMicros: 100,
        },
        {
          suite: 'inbox',
          scenario: `commit ceiling (pg.Pool, ${CONCURRENCY} clients, autocommit INSERT) vs dedup on`,
          baseline: autocommit,
          candidate: runs.dedup,
          target: 0,
        },
      ];
    } finally {
      await deleteByPrefix(connection, prefix, [plainQueue, dedupQueue, exchange]);
      await connection.close();
      await db.drop();
    }
  },
};
