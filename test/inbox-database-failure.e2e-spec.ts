import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, HEADERS, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.order-placed', idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
}

const PAYMENTS = uniqueQueue('payments');

/** Records its database backend and the effect, then waits for the test before its second write. */
@Injectable()
class PaymentHandler {
  readonly attempts: Array<{
    backendPid: number;
    attempt: number;
    redelivered: boolean;
    redeliveries: unknown;
    error?: string;
  }> = [];
  hold?: Promise<void>;
  holding?: () => void;

  @Consume({ queue: PAYMENTS, queueType: 'classic' })
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<void> {
    const manager = ctx.manager;
    if (!manager) throw new Error('dedup is on, so the handler runs in a transaction');
    const [{ pid }] = await manager.query<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid');
    const attempt: (typeof this.attempts)[number] = {
      backendPid: pid,
      attempt: ctx.attempt,
      redelivered: ctx.redelivered,
      redeliveries: ctx.envelope.headers[HEADERS.redeliveries],
    };
    this.attempts.push(attempt);
    await manager.query('INSERT INTO payments (order_id, step) VALUES ($1, 1)', [event.orderId]);
    const hold = this.hold;
    this.hold = undefined;
    if (hold) {
      this.holding?.();
      await hold;
    }
    try {
      await manager.query('INSERT INTO payments (order_id, step) VALUES ($1, 2)', [event.orderId]);
    } catch (error) {
      attempt.error = (error as Error).message;
      throw error;
    }
  }
}

describe('inbox: the database connection dies mid-handler', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE payments (id serial PRIMARY KEY, order_id text NOT NULL, step int NOT NULL)',
    ]);
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [PaymentHandler],
      options: { dataSource: await db.connect(), outbox: { relay: false } },
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('holds the delivery, runs it again as the same attempt once the database answers, and applies it once', async () => {
    const handler = app.get(PaymentHandler);
    let release!: () => void;
    handler.hold = new Promise<void>((resolve) => (release = resolve));
    const holding = new Promise<void>((resolve) => (handler.holding = resolve));

    await app.publisher.publishNow(Object.assign(new OrderPlaced(), { orderId: 'o-1' }));
    await holding;
    const [terminated] = await db.dataSource.query<Array<{ ok: boolean }>>(
      'SELECT pg_terminate_backend($1) AS ok',
      [handler.attempts[0].backendPid],
    );
    expect(terminated.ok).toBe(true);
    release();

    await waitFor('a second attempt to commit', async () => {
      const [row] = await db.dataSource.query<
        Array<{
          n: number;
        }>
      >(`SELECT count(*)::int AS n FROM rm_inbox`);
      return row.n === 1;
    });
    await waitFor('the queue to be empty', async () => {
      const counts = await queueCounts(PAYMENTS);
      return counts.ready + counts.unacked === 0;
    });

    // The module's own hold is neither a redelivery nor a spent attempt: the broker never saw it come back.
    expect(handler.attempts).toEqual([
      {
        backendPid: expect.any(Number),
        attempt: 1,
        redelivered: false,
        redeliveries: undefined,
        error: expect.stringMatching(/terminat|already released/i),
      },
      { backendPid: expect.any(Number), attempt: 1, redelivered: false, redeliveries: undefined },
    ]);
    expect(handler.attempts[1].backendPid).not.toBe(handler.attempts[0].backendPid);
    expect(await db.dataSource.query(`SELECT order_id AS "orderId", step FROM payments ORDER BY id`)).toEqual(
      [
        { orderId: 'o-1', step: 1 },
        { orderId: 'o-1', step: 2 },
      ],
    );
    expect(await broker.queueDepth(`${PAYMENTS}.dlq`)).toBe(0);
    expect(app.logger.find('warn', /the database is unavailable/)).toHaveLength(1);
  });
});
