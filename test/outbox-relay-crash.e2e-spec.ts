import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import type { DataSource } from 'typeorm';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { InboxStats } from 'nestjs-reliable-messaging/operations';
import { ChildApp } from './support/child-app';
import { createMessagingDatabase, outboxRows, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/outbox-app.js`;

@MessageType({
  type: 'fixture.order-placed',
  idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}`,
})
class OrderPlaced {
  @IsString() orderId!: string;
}

const PAYMENTS = uniqueQueue('payments');

/** A deduplicating consumer of what the relay publishes: records one effect per message handled. */
@Injectable()
class PaymentHandler {
  @Consume({ queue: PAYMENTS, queueType: 'classic' })
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<void> {
    await ctx.manager?.query('INSERT INTO effects (order_id) VALUES ($1)', [event.orderId]);
  }
}

/**
 * A relay in a child process (the relay-only deployment, `consumersEnabled: false`) is killed with SIGKILL after
 * the broker confirmed its batch and before the rows were marked published. The rows stay pending, the next
 * relay publishes them again, and the deduplicating consumer applies each message once.
 */
describe('outbox: a relay killed between the confirm and marking the rows', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let consumer: MessagingTestApp;
  let consumerDataSource: DataSource;
  let exchange: string;
  const ORDERS = ['o-1', 'o-2', 'o-3', 'o-4', 'o-5'];

  function startRelay(env: Record<string, string> = {}): ChildApp {
    return ChildApp.start(FIXTURE, {
      env: {
        FIXTURE_ROLE: 'relay',
        DATABASE_URL: db.database.url,
        AMQP_URL: broker.url,
        FIXTURE_EXCHANGE: exchange,
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.relay`,
        ...env,
      },
    });
  }

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE effects (id serial PRIMARY KEY, order_id text NOT NULL)',
    ]);
    broker = await TestBroker.connect();
    exchange = broker.name('events');
    broker.track(`${exchange}.dead-letter`, `${PAYMENTS}.dlq`);
    consumer = await MessagingTestApp.start(broker, {
      providers: [PaymentHandler],
      options: { exchange, dataSource: (consumerDataSource = await db.connect()), outbox: { relay: false } },
    });
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await consumer?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('publishes the rows again after the crash, and the consumer applies each message once', async () => {
    await consumerDataSource.transaction(async (manager) => {
      for (const orderId of ORDERS) {
        await consumer.publisher.publish(Object.assign(new OrderPlaced(), { orderId }), { manager });
      }
    });
    const stats = consumer.get(InboxStats);

    const crashing = startRelay({ FIXTURE_KILL_POINT: 'before-mark' });
    await crashing.waitForLine(/^fixture: confirmed 5 row\(s\) in all, not marked$/);
    expect(await crashing.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    expect((await outboxRows(db.dataSource)).map((row) => row.status)).toEqual(ORDERS.map(() => 'pending'));

    const relay = startRelay();
    await waitFor('every row marked published', async () =>
      (await outboxRows(db.dataSource)).every((row) => row.status === 'published'),
    );
    await waitFor(
      () => `5 duplicates skipped (saw ${stats.duplicatesOf(PAYMENTS)})`,
      () => stats.duplicatesOf(PAYMENTS) === 5,
    );
    await relay.stop('SIGTERM');

    expect(await db.dataSource.query('SELECT order_id AS "orderId" FROM effects ORDER BY order_id')).toEqual(
      ORDERS.map((orderId) => ({ orderId })),
    );
    expect(await db.dataSource.query('SELECT count(*)::int AS n FROM rm_inbox')).toEqual([{ n: 5 }]);
  });
});
