import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { HAND_WRITTEN_TABLES } from '../bench/hand-written/hand-written-schema';
import { ORDER_FLOW_TABLES, ORDER_FLOW_TRUNCATE } from '../bench/hand-written/order-flow/order-flow-schema';
import {
  orderFlowBrokerNames,
  orderFlowNames,
  type OrderFlowNames,
} from '../bench/hand-written/order-flow/order-topology';
import { ChildApp } from './support/child-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

/** The compiled hand-written order service (the transactional benchmark's order-flow case runs it). */
const SERVICE = 'dist/bench/hand-written/order-flow/main.js';
const ORDER = { customerId: 'c-1', items: [{ sku: 'BOOK-1', quantity: 2, unitPrice: 19.99 }] };

/** What became of every order the service stored: one row per order. */
interface Outcome {
  id: string;
  status: string;
  receipt: boolean;
  payments: number;
  history: number;
  events: number;
  /** The order's saga instance: its status, its version and the steps its history holds. */
  saga: string | null;
  version: number | null;
  steps: number;
  /** Timeouts still scheduled for the order. */
  timeouts: number;
}

/** What each order sends: OrderPlaced, two status changes, RequestPayment, PaymentCaptured, OrderPaid, OrderShipped. */
const EVENTS_PER_ORDER = 7;
/** A completed order's saga: started on OrderPlaced, continued on PaymentCaptured, completed on OrderShipped. */
const COMPLETED_SAGA = { saga: 'completed', version: 3, steps: 3, timeouts: 0 };

/**
 * The benchmarks' hand-written order service (bench/hand-written/order-flow/) keeps the guarantees it is compared
 * on, run as the benchmark runs it against the real broker and database: every order goes through the order
 * saga's steps (its instance completed at version 3, its payment timeout deleted), is paid once, shipped and
 * gets one receipt, with each status change recorded once by the history and the activity feed; a copy of a
 * message charges nothing more; and a crash mid-flow loses and doubles nothing.
 */
describe('the hand-written order service of the benchmarks', () => {
  let broker: TestBroker;
  let db: TestDatabase;
  let pool: pg.Pool;
  let names: OrderFlowNames;
  let service: ChildApp | undefined;
  let baseUrl: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    names = orderFlowNames(`${broker.prefix}.orders`);
    broker.track(...orderFlowBrokerNames(names));
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    for (const sql of [...HAND_WRITTEN_TABLES, ...ORDER_FLOW_TABLES]) await pool.query(sql);
  });

  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await pool?.end();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  async function start(): Promise<void> {
    service = ChildApp.start(SERVICE, {
      env: {
        DATABASE_URL: db.url,
        AMQP_URL: broker.url,
        MESSAGING_NAMESPACE: `${broker.prefix}.orders`,
        PORT: '0',
        RECEIPT_LATENCY_MS: '0',
      },
    });
    const line = await service.waitForLine(/listening on port (\d+)/, 15_000);
    baseUrl = `http://127.0.0.1:${/port (\d+)/.exec(line)?.[1]}`;
  }

  function post(body: unknown, contentType = 'application/json'): Promise<Response> {
    return fetch(`${baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  async function outcomes(): Promise<Outcome[]> {
    const { rows } = await pool.query<Outcome>(
      `SELECT o.id, o.status, o.receipt_id IS NOT NULL AS receipt,
              (SELECT count(*) FROM hw_payments p WHERE p.order_id = o.id)::int AS payments,
              (SELECT count(*) FROM hw_order_history h WHERE h.order_id = o.id)::int AS history,
              (SELECT count(*) FROM hw_outbox x WHERE x.ordering_key = o.id::text AND x.status = 'published')::int AS events,
              s.status AS saga, s.version,
              (SELECT count(*) FROM hw_saga_history sh WHERE sh.saga_id = s.id)::int AS steps,
              (SELECT count(*) FROM hw_scheduled t WHERE t.ordering_key = o.id::text)::int AS timeouts
         FROM hw_orders o LEFT JOIN hw_saga s ON s.correlation_key = o.id::text ORDER BY o.id`,
    );
    return rows;
  }

  /**
   * Waits until every order is shipped, has its receipt, its saga completed, all its events sent and its status
   * changes recorded twice.
   */
  async function settled(orders: number, timeoutMs = 20_000): Promise<Outcome[]> {
    let seen: Outcome[] = [];
    await waitFor(
      () => `${orders} orders settled (${seen.filter(done).length} are)`,
      async () => {
        seen = await outcomes();
        return seen.length === orders && seen.every(done);
      },
      { timeoutMs },
    );
    return seen;
  }
  const done = (order: Outcome): boolean =>
    order.status === 'shipped' &&
    order.receipt &&
    order.saga === 'completed' &&
    order.history >= 4 &&
    order.events >= EVENTS_PER_ORDER;

  it('each order goes through the saga (completed, no timeout left), is paid once, shipped, gets one receipt, and each of its status changes is recorded once by the history and the activity feed', async () => {
    await pool.query(ORDER_FLOW_TRUNCATE);
    await start();

    const responses = await Promise.all(Array.from({ length: 20 }, () => post(ORDER)));
    const views = await Promise.all(responses.map((response) => response.json() as Promise<{ id: string }>));

    expect(responses.map((response) => response.status)).toEqual(Array<number>(20).fill(201));
    expect(views[0]).toMatchObject({ status: 'placed', totalCents: 3998, receiptSent: false });
    const orders = await settled(20);
    expect(orders.map((order) => order.id).sort()).toEqual(views.map((view) => view.id).sort());
    expect(orders.map(({ id: _id, status: _status, receipt: _receipt, ...rows }) => rows)).toEqual(
      Array(20).fill({ payments: 1, history: 4, events: EVENTS_PER_ORDER, ...COMPLETED_SAGA }),
    );
    const { rows } = await pool.query<{ recorder: string; sequences: number[] }>(
      `SELECT recorder, array_agg(sequence ORDER BY position) AS sequences FROM hw_order_history
        WHERE order_id = $1 GROUP BY recorder ORDER BY recorder`,
      [views[0].id],
    );
    expect(rows).toEqual([
      { recorder: 'activity', sequences: [1, 2] },
      { recorder: 'history', sequences: [1, 2] },
    ]);
  });

  it.each([
    ['an OrderPlaced', 'order.placed', 'sagaPlaced'],
    ['a RequestPayment', 'payment.requested', 'payment'],
  ] as const)(
    'a copy of %s already handled, under a new message id, charges nothing more and sends nothing again',
    async (_message, routingKey, queue) => {
      await pool.query(ORDER_FLOW_TRUNCATE);
      await start();
      const { id } = (await (await post(ORDER)).json()) as { id: string };
      await settled(1);
      const { rows } = await pool.query<{ properties: Record<string, unknown>; body: Buffer }>(
        'SELECT properties, body FROM hw_outbox WHERE ordering_key = $1 AND routing_key = $2',
        [id, routingKey],
      );

      await broker.publishRaw({ exchange: names.exchange, routingKey }, rows[0].body, {
        ...rows[0].properties,
        messageId: randomUUID(),
      });
      await waitFor(`the copy taken from the ${queue} queue`, async () => {
        return (await broker.checkQueue(names[queue].queue)).messageCount === 0;
      });
      // A graceful stop settles every delivery in flight: after it, the copy has been handled.
      expect(await service?.stop()).toMatchObject({ code: 0 });

      expect(await outcomes()).toEqual([
        expect.objectContaining({ id, payments: 1, events: EVENTS_PER_ORDER, ...COMPLETED_SAGA }),
      ]);
    },
  );

  it('killed mid-flow and started again, it loses no order and doubles no charge, receipt or history entry', async () => {
    await pool.query(ORDER_FLOW_TRUNCATE);
    await start();
    const accepted: string[] = [];
    const placing = (async () => {
      for (let n = 0; n < 150; n++) {
        const response = await post(ORDER).catch(() => undefined);
        if (response?.status !== 201) return;
        accepted.push(((await response.json()) as { id: string }).id);
      }
    })();
    await waitFor('40 orders accepted', () => accepted.length >= 40);

    service?.kill('SIGKILL');
    await placing;
    await service?.waitForExit();
    await start();

    const orders = await settled((await outcomes()).length);
    expect(orders.map((order) => order.id)).toEqual(expect.arrayContaining(accepted));
    expect(
      orders.filter(
        (order) => order.payments !== 1 || order.history !== 4 || order.version !== 3 || order.timeouts !== 0,
      ),
    ).toEqual([]);
  });

  it.each([
    ['no customer', { items: ORDER.items }, 'customerId must be a non-empty string'],
    ['no items', { customerId: 'c-1', items: [] }, 'items must be an array of 1 to 100 lines'],
    [
      'a price with three decimals',
      { customerId: 'c-1', items: [{ sku: 'A', quantity: 1, unitPrice: 1.999 }] },
      'items.0.unitPrice must be a number from 0 to 1000000 with at most 2 decimal places',
    ],
    ['an unknown property', { ...ORDER, discount: 10 }, 'discount should not exist'],
    [
      'a customer id of 101 characters',
      { ...ORDER, customerId: 'c'.repeat(101) },
      'customerId must be at most 100 characters long',
    ],
  ])(
    'a body with %s is refused with a 400 naming the field, and nothing is stored',
    async (_case, body, problem) => {
      await start();
      const before = (await outcomes()).length;

      const response = await post(body);

      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string[] }).message).toContain(problem);
      expect(await outcomes()).toHaveLength(before);
    },
  );

  it('a body that is not JSON is refused with a 415 or 400', async () => {
    await start();

    expect((await post('customerId=c-1', 'application/x-www-form-urlencoded')).status).toBe(415);
    expect((await post('{"customerId":', 'application/json')).status).toBe(400);
  });
});
