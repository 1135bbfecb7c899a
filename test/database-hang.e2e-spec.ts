import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { MessagingHealth, ReliableMessagingHealthModule } from 'nestjs-reliable-messaging/health';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TcpProxy } from './support/tcp-proxy';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'bank.transfer-booked', idempotencyKey: (m: TransferBooked) => `transfer:${m.id}` })
class TransferBooked {
  @IsString() id!: string;
}

const TRANSFERS = 6;
const CONCURRENCY = 3;

/** Books each transfer in the inbox transaction; remembers each run's attempt. */
function ledgerHandler(queue: string) {
  @Injectable()
  class LedgerHandler {
    readonly runs: Array<{ id: string; attempt: number }> = [];

    @Consume({ queue, queueType: 'classic', concurrency: CONCURRENCY, prefetch: CONCURRENCY })
    async onBooked(event: TransferBooked, ctx: MessageContext): Promise<void> {
      this.runs.push({ id: event.id, attempt: ctx.attempt });
      await ctx.manager!.query('INSERT INTO ledger (transfer_id) VALUES ($1)', [event.id]);
    }
  }
  return LedgerHandler;
}

/**
 * A database that hangs instead of refusing (a network dropping packets, here a proxy that stops forwarding
 * and answers no new connection). Queries then fail only by a timeout: the driver's `query_timeout`, or, when
 * none is set, the handler's deadline. Either way the module must see an outage, not a failing message: no
 * attempt is spent, nothing is dead-lettered, liveness stays up, and every message applies once as attempt 1
 * after the database answers again. Without the fix, the timeouts count as failed attempts.
 */
describe.each([
  {
    name: "the driver's query_timeout",
    queryString: '?query_timeout=800',
    deadlineMs: 30_000,
  },
  {
    name: 'the handler deadline (no query_timeout)',
    queryString: '',
    deadlineMs: 1_500,
  },
])('a database that hangs, seen through $name', ({ name, queryString, deadlineMs }) => {
  const queue = uniqueQueue(`hang-${queryString ? 'read-timeout' : 'deadline'}`);
  const Handler = ledgerHandler(queue);
  let db: MessagingDatabase;
  let broker: TestBroker;
  let proxy: TcpProxy;
  let app: MessagingTestApp;
  const registry = new Registry();
  const databaseAvailable = async () =>
    (await registry.getSingleMetric('rm_database_available')?.get())?.values[0]?.value;
  const overdue = async () =>
    (await registry.getSingleMetric('rm_handlers_overdue')?.get())?.values.find(
      (value) => value.labels.queue === queue,
    )?.value;

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE ledger (id serial PRIMARY KEY, transfer_id text NOT NULL)',
    ]);
    proxy = await TcpProxy.start(db.database.url);
    broker = await TestBroker.connect();
    const dataSource = await db.connect(10, () => `${proxy.url}${queryString}`);
    app = await MessagingTestApp.start(broker, {
      providers: [Handler],
      imports: [ReliableMessagingHealthModule],
      options: {
        dataSource,
        outbox: { relay: false },
        metricsRegistry: registry,
        probeTimeoutMs: 500,
        defaultDeadlineMs: deadlineMs,
        // Without the pause, three quick attempts would dead-letter every message the hang touched.
        retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 100 },
      },
    });
  });

  afterAll(async () => {
    proxy?.restore();
    await app?.close();
    await proxy?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('holds the messages without spending attempts, keeps liveness up, and applies each once after', async () => {
    const handler = app.get(Handler);
    // Warm up, so the pool holds open connections that the stall then freezes mid-query.
    await app.publisher.publishNow(Object.assign(new TransferBooked(), { id: 'warm-up' }));
    await waitFor('the warm-up transfer', () => handler.runs.length === 1);
    await waitFor('the warm-up committed', async () => (await count(db)) === 1);

    proxy.stall();
    for (let i = 0; i < TRANSFERS; i++)
      await app.publisher.publishNow(Object.assign(new TransferBooked(), { id: `t-${i}` }));
    await waitFor(
      () =>
        `${name} seen as a database outage (runs: ${JSON.stringify(handler.runs)}; ` +
        `proxied connections: ${proxy.connections}; the app logged:\n${app.logger.dump()})`,
      async () => (await databaseAvailable()) === 0,
      { timeoutMs: 20_000 },
    );
    if (!queryString) {
      // Every slot is held by a handler stuck on the database past its deadline: not the process's fault.
      await waitFor(
        'every slot held by a handler past its deadline',
        async () => (await overdue()) === CONCURRENCY,
      );
      const [handlers] = app.get(MessagingHealth).liveness();
      const liveness = await (handlers as () => Promise<Record<string, unknown>>)();
      expect(liveness).toMatchObject({ handlers: { status: 'up', waitingForDatabase: true } });
    }
    expect(handler.runs.slice(1).every((run) => run.attempt === 1)).toBe(true);

    proxy.restore();
    await waitFor('every transfer booked', async () => (await count(db)) === TRANSFERS + 1, {
      timeoutMs: 30_000,
    });
    const booked = await db.dataSource.query<Array<{ transfer_id: string }>>(
      'SELECT transfer_id FROM ledger',
    );
    expect(booked.map((row) => row.transfer_id).sort()).toEqual(
      ['warm-up', ...Array.from({ length: TRANSFERS }, (_, i) => `t-${i}`)].sort(),
    );
    expect(handler.runs.every((run) => run.attempt === 1)).toBe(true);
    expect(await broker.getAll(`${queue}.dlq`)).toEqual([]);
  });
});

async function count(db: MessagingDatabase): Promise<number> {
  const [row] = await db.dataSource.query<Array<{ n: number }>>('SELECT count(*)::int AS n FROM ledger');
  return row.n;
}
