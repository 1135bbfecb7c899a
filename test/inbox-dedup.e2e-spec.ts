import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import type { DataSource } from 'typeorm';
import { Consume, MessagePublisher, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { InboxStats } from 'nestjs-reliable-messaging/operations';
import { InboxPruner } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, outboxRows, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.order-placed', idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
}

@MessageType({ type: 'shop.order-paid', idempotencyKey: (m: OrderPaid) => `order-paid:${m.orderId}` })
class OrderPaid {
  @IsString() orderId!: string;
}

const placed = (orderId: string): OrderPlaced => Object.assign(new OrderPlaced(), { orderId });

/** A promise with its resolve function, to hold a handler until the test lets it finish. */
class Gate {
  open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
}

const PAYMENTS = uniqueQueue('payments');
const SHIPPING = uniqueQueue('shipping');

/** Takes payment: records the effect and publishes OrderPaid, both in the inbox transaction (ctx.manager). */
@Injectable()
class PaymentHandler {
  calls = 0;
  failFirst = new Set<string>();
  gate?: Gate;
  started?: () => void;

  constructor(private readonly publisher: MessagePublisher) {}

  @Consume({
    queue: PAYMENTS,
    queueType: 'classic',
    concurrency: 1,
    retry: { initialDelayMs: 20, maxDelayMs: 50 },
  })
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<void> {
    this.calls++;
    await ctx.manager?.query('INSERT INTO payments (order_id) VALUES ($1)', [event.orderId]);
    await this.publisher.publish(Object.assign(new OrderPaid(), { orderId: event.orderId }));
    this.started?.();
    await this.gate?.opened;
    if (this.failFirst.delete(event.orderId)) throw new Error('the payment provider timed out');
  }
}

/** Ships: idempotent by construction, so it declares dedup off and sees every copy. */
@Injectable()
class ShippingHandler {
  readonly seen: string[] = [];

  @Consume({ queue: SHIPPING, queueType: 'classic', dedup: false })
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<void> {
    this.seen.push(`${event.orderId} manager=${ctx.manager ? 'yes' : 'no'}`);
  }
}

async function count(dataSource: DataSource, sql: string, params: unknown[] = []): Promise<number> {
  const [row] = await dataSource.query<Array<{ n: number }>>(sql, params);
  return row.n;
}

describe('inbox: a message applies its effect once', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let payments: PaymentHandler;

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE payments (id serial PRIMARY KEY, order_id text NOT NULL)',
    ]);
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [PaymentHandler, ShippingHandler],
      options: { dataSource: db.dataSource, outbox: { relay: false } },
    });
    payments = app.get(PaymentHandler);
  });

  afterEach(() => {
    payments.gate = undefined;
    payments.started = undefined;
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('skips and acknowledges a second copy; the effect, its OrderPaid and the inbox row committed together', async () => {
    const stats = app.get(InboxStats);
    await app.publisher.publishNow(placed('o-1'));
    await app.publisher.publishNow(placed('o-1'));

    await waitFor('the copy to be skipped', () => stats.duplicatesOf(PAYMENTS) === 1);
    await waitFor('both copies acknowledged', async () => {
      const counts = await queueCounts(PAYMENTS);
      return counts.ready + counts.unacked === 0;
    });

    expect(payments.calls).toBe(1);
    expect(await count(db.dataSource, `SELECT count(*)::int AS n FROM payments WHERE order_id = 'o-1'`)).toBe(
      1,
    );
    expect(await db.dataSource.query(`SELECT consumer, idempotency_key AS key FROM rm_inbox`)).toEqual([
      { consumer: PAYMENTS, key: 'order-placed:o-1' },
    ]);
    expect((await outboxRows(db.dataSource)).map((row) => [row.type, row.body])).toEqual([
      ['shop.order-paid', '{"orderId":"o-1"}'],
    ]);
    expect(await broker.queueDepth(`${PAYMENTS}.dlq`)).toBe(0);
  });

  it('handles every copy in a consumer that declares dedup off, without a transaction', async () => {
    const shipping = app.get(ShippingHandler);
    await waitFor('both copies of o-1 shipped', () => shipping.seen.length >= 2);

    expect(shipping.seen).toEqual(['o-1 manager=no', 'o-1 manager=no']);
  });

  it('rolls back the effect, the OrderPaid and the inbox row of a failed attempt, and applies the retry once', async () => {
    payments.failFirst.add('o-2');
    const before = payments.calls;
    await app.publisher.publishNow(placed('o-2'));

    await waitFor('the retry to succeed', async () => {
      return (
        (await count(
          db.dataSource,
          `SELECT count(*)::int AS n FROM rm_inbox WHERE idempotency_key = 'order-placed:o-2'`,
        )) === 1
      );
    });

    expect(payments.calls - before).toBe(2);
    expect(await count(db.dataSource, `SELECT count(*)::int AS n FROM payments WHERE order_id = 'o-2'`)).toBe(
      1,
    );
    expect((await outboxRows(db.dataSource)).filter((row) => row.body === '{"orderId":"o-2"}')).toHaveLength(
      1,
    );
  });

  it('applies one effect when two replicas handle the same idempotency key at the same moment', async () => {
    const replica = await MessagingTestApp.start(broker, {
      providers: [PaymentHandler, ShippingHandler],
      options: { dataSource: await db.connect(), outbox: { relay: false } },
    });
    const handlers = [payments, replica.get(PaymentHandler)];
    const gate = new Gate();
    let started = 0;
    for (const handler of handlers) {
      handler.gate = gate;
      handler.started = () => started++;
    }
    const stats = [app.get(InboxStats), replica.get(InboxStats)];
    const duplicatesBefore = stats[0].duplicates + stats[1].duplicates;
    const callsBefore = handlers[0].calls + handlers[1].calls;

    await app.publisher.publishNow(placed('o-3'));
    await app.publisher.publishNow(placed('o-3'));
    await waitFor('one handler holding o-3 and the other copy waiting on its inbox row', async () => {
      const [waiting] = await db.dataSource.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() ` +
          `AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "rm_inbox"%'`,
      );
      return started === 1 && waiting.n === 1;
    });
    gate.open();

    await waitFor(
      'the waiting copy to be skipped',
      () => stats[0].duplicates + stats[1].duplicates === duplicatesBefore + 1,
    );
    await replica.close();
    expect(handlers[0].calls + handlers[1].calls - callsBefore).toBe(1);
    expect(await count(db.dataSource, `SELECT count(*)::int AS n FROM payments WHERE order_id = 'o-3'`)).toBe(
      1,
    );
    expect((await outboxRows(db.dataSource)).filter((row) => row.body === '{"orderId":"o-3"}')).toHaveLength(
      1,
    );
  });

  it('prunes inbox rows past their retention, in batches, and keeps recent ones', async () => {
    await db.dataSource.query(
      `INSERT INTO rm_inbox (consumer, idempotency_key, message_id, message_type, processed_at) ` +
        `SELECT 'old-consumer', 'old-' || n, 'm-' || n, 'shop.order-placed', now() - interval '8 days' FROM generate_series(1, 2500) n`,
    );
    const recent = await count(
      db.dataSource,
      `SELECT count(*)::int AS n FROM rm_inbox WHERE consumer <> 'old-consumer'`,
    );

    expect(await app.get(InboxPruner).pruneNow()).toBe(2500);
    expect(await count(db.dataSource, `SELECT count(*)::int AS n FROM rm_inbox`)).toBe(recent);
  });
});

describe('inbox: configuration', () => {
  let broker: TestBroker;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });

  afterAll(async () => {
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('fails startup when a consumer asks for dedup and the module has no dataSource', async () => {
    @Injectable()
    class Strict {
      @Consume({ queue: uniqueQueue('strict'), dedup: true })
      async on(_event: OrderPlaced): Promise<void> {}
    }

    const { error } = await MessagingTestApp.startFailing(broker, { providers: [Strict] });

    expect(String(error)).toMatch(/Strict.on: dedup needs the module's dataSource option/);
  });

  it('warns at startup when inbox rows may be pruned before a message can arrive again', async () => {
    const db = await createMessagingDatabase();
    try {
      const app = await MessagingTestApp.start(broker, {
        providers: [PaymentHandler],
        options: { dataSource: db.dataSource, inbox: { retentionMs: 60_000, replayWindowMs: 3_600_000 } },
      });
      await app.close();
      expect(
        app.logger.find('warn', /inbox.retentionMs \(60000 ms\) does not exceed inbox.replayWindowMs/),
      ).toHaveLength(1);
    } finally {
      await db.drop();
    }
  });
});
