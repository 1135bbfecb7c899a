import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { Consume, ReliableMessagingModule, type MessageContext } from '@app/reliable-messaging';
import { BenchOrderPlaced } from './bench-message';
import { createBenchDatabase } from './bench-database';
import { prepublish } from './consume.bench';
import {
  alternate,
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  Progress,
  rawConnection,
  ROUNDS,
  uniquePrefix,
  type Measurement,
  type Suite,
} from './harness';

/** Handlers running at once (and the prefetch) of both consumers; the pool has a connection for each. */
const CONCURRENCY = Number(process.env.BENCH_PREFETCH ?? 20);

/** An app whose one consumer does no work of its own, with dedup on or off; both run on the same DataSource. */
function consumerApp(
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

async function drain(app: DynamicModule, progress: { current?: Progress }): Promise<Measurement> {
  progress.current = new Progress(MESSAGES);
  const context = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
  await progress.current.finished;
  const measurement = progress.current.measurement();
  await context.close();
  return measurement;
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
      const runs = await alternate(
        ROUNDS,
        async () => {
          await prepublish(connection, plainQueue, MESSAGES);
          return drain(plain, progress);
        },
        async () => {
          await prepublish(connection, dedupQueue, MESSAGES);
          const measurement = await drain(dedup, progress);
          await dataSource.query('TRUNCATE rm_inbox');
          return measurement;
        },
      );
      return [
        {
          suite: 'inbox',
          scenario: `quorum queue, ${CONCURRENCY} handlers at once: dedup off vs dedup on`,
          ...runs,
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
