import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import { Consume, HEADERS, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { MessagingHealth, ReliableMessagingHealthModule } from 'nestjs-reliable-messaging/health';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TcpProxy } from './support/tcp-proxy';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.order-paid', idempotencyKey: (m: OrderPaid) => `order-paid:${m.orderId}` })
class OrderPaid {
  @IsString() orderId!: string;
}

@MessageType({
  type: 'shop.order-shipped',
  idempotencyKey: (m: OrderShipped) => `order-shipped:${m.orderId}`,
})
class OrderShipped {
  @IsString() orderId!: string;
}

const LEDGER = uniqueQueue('ledger');
const AUDIT = uniqueQueue('audit');
const REFUNDS = uniqueQueue('refunds');
const STATEMENTS = uniqueQueue('statements');
const NOTIFICATIONS = uniqueQueue('notifications');
const ORDERS = 12;

/** What a handler saw on each run: the attempt and the redeliveries the message carried. */
interface Run {
  orderId: string;
  attempt: number;
  redelivered: boolean;
  redeliveries: unknown;
}

function runOf(event: OrderPaid, ctx: MessageContext): Run {
  return {
    orderId: event.orderId,
    attempt: ctx.attempt,
    redelivered: ctx.redelivered,
    redeliveries: ctx.envelope.headers[HEADERS.redeliveries],
  };
}

/** Deduplicates through the inbox (the default with a dataSource) and writes in the handler's transaction. */
@Injectable()
class LedgerHandler {
  readonly runs: Run[] = [];

  @Consume({ queue: LEDGER, queueType: 'quorum', concurrency: 4 })
  async onPaid(event: OrderPaid, ctx: MessageContext): Promise<void> {
    this.runs.push(runOf(event, ctx));
    await ctx.manager!.query('INSERT INTO ledger (order_id) VALUES ($1)', [event.orderId]);
  }
}

/** Idempotent by construction (`dedup: false`): writes through the DataSource, outside any inbox transaction. */
@Injectable()
class AuditHandler {
  readonly runs: Run[] = [];
  dataSource!: DataSource;

  @Consume({ queue: AUDIT, queueType: 'classic', dedup: false, concurrency: 4 })
  async onPaid(event: OrderPaid, ctx: MessageContext): Promise<void> {
    this.runs.push(runOf(event, ctx));
    await this.dataSource.query('INSERT INTO audit (order_id) VALUES ($1) ON CONFLICT DO NOTHING', [
      event.orderId,
    ]);
  }
}

/** One message at a time across replicas (`ordering: 'queue'`), through the inbox. */
@Injectable()
class StatementHandler {
  readonly runs: Run[] = [];

  @Consume({ queue: STATEMENTS, ordering: 'queue' })
  async onPaid(event: OrderPaid, ctx: MessageContext): Promise<void> {
    this.runs.push(runOf(event, ctx));
    await ctx.manager!.query('INSERT INTO statements (order_id) VALUES ($1)', [event.orderId]);
  }
}

/** Deduplicates through the inbox; only the spec's second app runs it to the end. */
@Injectable()
class RefundHandler {
  readonly runs: Run[] = [];

  @Consume({ queue: REFUNDS, queueType: 'classic', concurrency: 3 })
  async onPaid(event: OrderPaid, ctx: MessageContext): Promise<void> {
    this.runs.push(runOf(event, ctx));
    await ctx.manager!.query('INSERT INTO refunds (order_id) VALUES ($1)', [event.orderId]);
  }
}

/** Calls a notification service that is down on the first attempt: its refused socket is not the database's. */
@Injectable()
class NotificationHandler {
  readonly attempts: number[] = [];
  serviceUrl!: string;

  @Consume({
    queue: NOTIFICATIONS,
    queueType: 'classic',
    dedup: false,
    retry: { initialDelayMs: 100, maxDelayMs: 100 },
  })
  async onShipped(_event: OrderShipped, ctx: MessageContext): Promise<void> {
    this.attempts.push(ctx.attempt);
    if (ctx.attempt === 1) await fetch(this.serviceUrl, { signal: ctx.signal });
  }
}

async function count(db: MessagingDatabase, table: string): Promise<number> {
  const [row] = await db.dataSource.query<
    Array<{
      n: number;
    }>
  >(`SELECT count(*)::int AS n FROM ${table}`);
  return row.n;
}

describe('database outage: consumers pause, messages spend nothing', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let proxy: TcpProxy;
  let app: MessagingTestApp;
  const registry = new Registry();
  const databaseAvailable = async () =>
    (await registry.getSingleMetric('rm_database_available')?.get())?.values[0]?.value;

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE ledger (id serial PRIMARY KEY, order_id text NOT NULL)',
      'CREATE TABLE audit (order_id text PRIMARY KEY)',
      'CREATE TABLE refunds (id serial PRIMARY KEY, order_id text NOT NULL)',
      'CREATE TABLE statements (id serial PRIMARY KEY, order_id text NOT NULL)',
    ]);
    proxy = await TcpProxy.start(db.database.url);
    broker = await TestBroker.connect();
    const dataSource = await db.connect(10, () => proxy.url);
    app = await MessagingTestApp.start(broker, {
      providers: [LedgerHandler, AuditHandler, StatementHandler, NotificationHandler],
      imports: [ReliableMessagingHealthModule],
      options: {
        dataSource,
        outbox: { relay: false },
        metricsRegistry: registry,
        // Without the pause, two quick attempts would dead-letter every message the outage touched.
        retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 },
      },
    });
    app.get(AuditHandler).dataSource = dataSource;
  });

  afterAll(async () => {
    proxy?.restore();
    await app?.close();
    await proxy?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('holds every message through the outage, then applies each once as its first attempt', async () => {
    const ledger = app.get(LedgerHandler);
    const audit = app.get(AuditHandler);
    const statements = app.get(StatementHandler);
    proxy.cut();
    const refusedAtCut = proxy.refusedConnections;
    for (let i = 0; i < ORDERS; i++)
      await app.publisher.publishNow(Object.assign(new OrderPaid(), { orderId: `o-${i}` }));

    // The outage lasts while the module tries the database several times, far past both attempts' backoff.
    await waitFor('five refused connection attempts', () => proxy.refusedConnections - refusedAtCut >= 5);
    expect(ledger.runs).toEqual([]);
    expect(statements.runs).toEqual([]);
    expect(audit.runs.length).toBeLessThanOrEqual(4);
    const held = await queueCounts(AUDIT);
    expect(held.unacked + held.ready).toBe(ORDERS);
    const readiness = await Promise.all(
      app
        .get(MessagingHealth)
        .readiness()
        .map((check) => (check as () => Promise<Record<string, unknown>>)()),
    );
    expect(await databaseAvailable()).toBe(0);
    expect(readiness.find((result) => 'database' in result)?.database).toMatchObject({
      status: 'down',
      available: false,
    });

    proxy.restore();
    await waitFor('every order in the ledger and the audit', async () => {
      const counts = await Promise.all(['ledger', 'audit', 'statements'].map((table) => count(db, table)));
      return counts.every((n) => n === ORDERS);
    });
    await waitFor('both queues to be empty', async () => {
      const [a, b] = await Promise.all([queueCounts(LEDGER), queueCounts(AUDIT)]);
      return a.ready + a.unacked + b.ready + b.unacked === 0;
    });

    for (const runs of [ledger.runs, audit.runs, statements.runs]) {
      expect(
        runs.every((run) => run.attempt === 1 && !run.redelivered && run.redeliveries === undefined),
      ).toBe(true);
    }
    expect(ledger.runs).toHaveLength(ORDERS);
    expect(await databaseAvailable()).toBe(1);
    // The ordered consumer held its place through the outage: every message once, in publish order.
    const published = Array.from({ length: ORDERS }, (_, i) => `o-${i}`);
    expect(statements.runs.map((run) => run.orderId)).toEqual(published);
    expect(
      (
        await db.dataSource.query<
          Array<{
            order_id: string;
          }>
        >('SELECT order_id FROM statements ORDER BY id')
      ).map((row) => row.order_id),
    ).toEqual(published);
    expect(await broker.queueDepth(`${LEDGER}.dlq`)).toBe(0);
    expect(await broker.queueDepth(`${AUDIT}.dlq`)).toBe(0);
    expect(await broker.queueDepth(`${STATEMENTS}.dlq`)).toBe(0);
    expect(app.logger.find('warn', /the database is unavailable/)).toHaveLength(1);
    expect(app.logger.find('log', /the database answers again after \d+ ms/)).toHaveLength(1);
  });

  it('gives messages held at shutdown back as copies that cost no attempt and no redelivery', async () => {
    const dataSource = await db.connect(10, () => proxy.url);
    const first = await MessagingTestApp.start(broker, {
      providers: [RefundHandler],
      options: { dataSource, outbox: { relay: false } },
    });
    proxy.cut();
    const refusedAtCut = proxy.refusedConnections;
    for (let i = 0; i < 3; i++)
      await first.publisher.publishNow(Object.assign(new OrderPaid(), { orderId: `r-${i}` }));
    await waitFor('the three refunds held by the first app', async () => {
      const counts = await queueCounts(REFUNDS);
      return counts.unacked === 3 && proxy.refusedConnections - refusedAtCut >= 3;
    });

    await first.close();
    expect(await queueCounts(REFUNDS)).toEqual({ ready: 3, unacked: 0, consumers: 0 });
    expect(first.logger.find('warn', /shutting down while the database is unavailable/)).toHaveLength(3);
    expect(first.get(RefundHandler).runs).toEqual([]);

    proxy.restore();
    const second = await MessagingTestApp.start(broker, {
      providers: [RefundHandler],
      options: { dataSource: await db.connect(), outbox: { relay: false } },
    });
    try {
      await waitFor(
        'the three refunds applied by the second app',
        async () => (await count(db, 'refunds')) === 3,
      );
      const runs = second.get(RefundHandler).runs;
      expect(runs).toHaveLength(3);
      expect(
        runs.every((run) => run.attempt === 1 && !run.redelivered && run.redeliveries === undefined),
      ).toBe(true);
      expect(await broker.queueDepth(`${REFUNDS}.dlq`)).toBe(0);
    } finally {
      await second.close();
    }
  });

  it("counts another service's refused socket as the message's failure, not as a database outage", async () => {
    const handler = app.get(NotificationHandler);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    handler.serviceUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/notify`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const outagesBefore = app.logger.find('warn', /the database is unavailable/).length;

    await app.publisher.publishNow(Object.assign(new OrderShipped(), { orderId: 'n-1' }));
    await waitFor('the second attempt', () => handler.attempts.includes(2));

    expect(handler.attempts).toEqual([1, 2]);
    expect(app.logger.find('warn', /the database is unavailable/)).toHaveLength(outagesBefore);
  });
});
