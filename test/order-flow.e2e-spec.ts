import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { GetMessage } from 'amqplib';
import { Client } from 'pg';
import { ChildApp } from './support/child-app';
import { OrderServiceApp } from './support/order-service-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';
import { messagingNames } from '../apps/order-service/src/config/messaging-names';
import { SILENT_CUSTOMER_ID } from '../apps/order-service/src/payment/payment-gateway.consumer';
import { UNDELIVERABLE_CUSTOMER_ID } from '../apps/order-service/src/shipping/shipping.consumer';

const ORDER = {
  customerId: 'customer-7',
  items: [
    { sku: 'BOOK-DDIA', quantity: 2, unitPrice: 19.99 },
    { sku: 'MUG-RABBIT', quantity: 1, unitPrice: 5 },
  ],
};

const ADMIN_TOKEN = 'bfc946aa4005abd37bd025340ca21baed8e6e6d3';

/**
 * The order saga's payment timeout in this spec: long enough that a healthy order is always paid first on a busy
 * machine, short enough to watch an order that is never paid be cancelled.
 */
const PAYMENT_TIMEOUT_MS = 8_000;

describe('order flow: the order service as a process, against the real RabbitMQ and PostgreSQL', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let app: ChildApp;
  let baseUrl: string;
  let auditQueue: string;

  /** The app's queues with a dead-letter queue of their own (the history's are its partitions'). */
  const queues = (prefix: string) => {
    const { history: _partitioned, ...plain } = messagingNames(prefix).queues;
    return Object.values(plain);
  };

  async function post(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  async function get(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${baseUrl}${path}`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** The first message of `type` about order `id` on the audit queue (which keeps what it read for later calls). */
  const seen: GetMessage[] = [];
  async function waitForMessage(id: string, type: string): Promise<GetMessage> {
    const find = () =>
      seen.find(
        (m) =>
          m.properties.type === type &&
          (JSON.parse(m.content.toString()) as { orderId?: string }).orderId === id,
      );
    await waitFor(`${type} of order ${id}`, async () => {
      seen.push(...(await broker.getAll(auditQueue)));
      return find() !== undefined;
    });
    return find() as GetMessage;
  }

  /** The payment gateway's ledger for an order: charges, refunds, and whether its payment request was voided. */
  async function ledgerOf(id: string): Promise<{ charges: number; refunds: number; voided: boolean }> {
    const sql = new Client({ connectionString: database.url });
    await sql.connect();
    try {
      // The void comes with OrderCancelled, a moment after the saga completed.
      await waitFor('the payment request voided', async () => {
        const { rows } = await sql.query('SELECT 1 FROM payment_voids WHERE order_id = $1', [id]);
        return rows.length === 1;
      });
      const { rows } = await sql.query<{ charges: number; refunds: number }>(
        `SELECT (SELECT count(*)::int FROM payments WHERE order_id = $1) AS charges,
                (SELECT count(*)::int FROM refunds WHERE order_id = $1) AS refunds`,
        [id],
      );
      return { ...rows[0], voided: true };
    } finally {
      await sql.end();
    }
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    ({ process: app, baseUrl } = await OrderServiceApp.start(database, broker, {
      ADMIN_TOKEN,
      PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS),
    }));
    auditQueue = broker.name('audit');
    const channel = await broker.openChannel();
    await channel.assertQueue(auditQueue, { durable: false });
    await channel.bindQueue(auditQueue, `${broker.prefix}.events`, 'order.#');
    await channel.bindQueue(auditQueue, `${broker.prefix}.events`, 'payment.#');
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
  });

  it('takes an order over HTTP, then pays, ships and sends its receipt through messages', async () => {
    const placed = await post(ORDER);

    expect(placed.status).toBe(201);
    expect(placed.body).toMatchObject({
      status: 'placed',
      customerId: 'customer-7',
      totalCents: 4498,
      receiptSent: false,
      items: [
        { sku: 'BOOK-DDIA', quantity: 2, unitPriceCents: 1999 },
        { sku: 'MUG-RABBIT', quantity: 1, unitPriceCents: 500 },
      ],
    });
    const id = placed.body.id as string;
    let order: Record<string, unknown> = {};
    await waitFor(
      () => `order ${id} shipped with its receipt sent (last seen ${JSON.stringify(order)})`,
      async () => {
        order = (await get(`/orders/${id}`)).body;
        return order.status === 'shipped' && order.receiptSent === true;
      },
      { timeoutMs: 15_000 },
    );
    expect(Date.parse(order.paidAt as string)).toBeLessThanOrEqual(Date.parse(order.shippedAt as string));
    // The order's saga ran placed → payment requested → paid → shipped, and completed, which cancelled the
    // payment timeout it no longer waits for.
    await waitFor('the saga completed', async () => {
      order = (await get(`/orders/${id}`)).body;
      return (order.saga as { status?: string } | null)?.status === 'completed';
    });
    expect(order.saga).toMatchObject({
      status: 'completed',
      stage: 'shipped',
      version: 3,
      pendingTimeouts: [],
    });
    expect(
      (order.saga as { history: Array<{ messageType: string }> }).history.map((h) => h.messageType),
    ).toEqual(['order.placed', 'payment.captured', 'order.shipped']);
    for (const queue of queues(broker.prefix)) expect(await broker.queueDepth(`${queue}.dlq`)).toBe(0);

    // Both ordered consumers record the order's status changes, placed then paid, each once.
    const sql = new Client({ connectionString: database.url });
    await sql.connect();
    try {
      const history = async (): Promise<Array<{ recorder: string; statuses: string[] }>> =>
        (
          await sql.query<{ recorder: string; statuses: string[] }>(
            `SELECT recorder, array_agg(status ORDER BY position) AS statuses FROM order_history
              WHERE order_id = $1 GROUP BY recorder ORDER BY recorder`,
            [id],
          )
        ).rows;
      await waitFor('both ordered consumers recorded the paid order', async () => {
        const rows = await history();
        return rows.length === 2 && rows.every((row) => row.statuses.length === 2);
      });
      expect(await history()).toEqual([
        { recorder: 'activity', statuses: ['placed', 'paid'] },
        { recorder: 'history', statuses: ['placed', 'paid'] },
      ]);
    } finally {
      await sql.end();
    }
  });

  it('emits the flow keyed by order, each message caused by the one before it, all in one correlation', async () => {
    const { body } = await post(ORDER);
    const id = body.id as string;
    const mine: GetMessage[] = [];
    const ofType = (type: string) => mine.find((message) => message.properties.type === type);
    const chain = ['order.placed', 'payment.requested', 'payment.captured', 'order.paid', 'order.shipped'];
    await waitFor(
      () =>
        `the flow of order ${id} on ${auditQueue} (saw ${mine.map((m) => String(m.properties.type)).join(', ')})`,
      async () => {
        const arrived = await broker.getAll(auditQueue);
        mine.push(
          ...arrived.filter(
            (message) => (JSON.parse(message.content.toString()) as { orderId: string }).orderId === id,
          ),
        );
        return chain.every((type) => ofType(type) !== undefined);
      },
      { timeoutMs: 15_000 },
    );
    const placed = ofType('order.placed') as GetMessage;
    const paid = ofType('order.paid') as GetMessage;

    expect(JSON.parse(placed.content.toString())).toEqual({
      orderId: id,
      customerId: 'customer-7',
      totalCents: 4498,
      itemCount: 2,
      placedAt: body.createdAt,
    });
    expect(placed.properties.headers).toMatchObject({
      'rm-idempotency-key': `order-placed:${id}`,
      'rm-ordering-key': id,
    });
    expect(JSON.parse(paid.content.toString())).toMatchObject({ orderId: id, amountCents: 4498 });
    expect(paid.properties.headers).toMatchObject({
      'rm-idempotency-key': `order-paid:${id}`,
      'rm-ordering-key': id,
    });
    for (let step = 1; step < chain.length; step++) {
      const message = ofType(chain[step]) as GetMessage;
      expect([chain[step], message.properties.headers?.['rm-causation-id']]).toEqual([
        chain[step],
        (ofType(chain[step - 1]) as GetMessage).properties.messageId,
      ]);
      expect(message.properties.correlationId).toBe(placed.properties.messageId);
    }
    // The flow's first message is its own correlation id, left off the wire (docs/envelope.md).
    expect(placed.properties.correlationId).toBeUndefined();
  });

  it('shows an order and its saga from one snapshot, when a step commits between reading the one and the other', async () => {
    const id = (await post(ORDER)).body.id as string;
    let before: Record<string, unknown> = {};
    await waitFor('the order shipped, its receipt sent and its saga completed', async () => {
      before = (await get(`/orders/${id}`)).body;
      return (
        before.receiptSent === true && (before.saga as { status?: string } | null)?.status === 'completed'
      );
    });
    const version = (before.saga as { version: number }).version;

    // A step's commit (the order row and the instance in one transaction) lands while the API is between its two
    // reads: the instance's table is locked until the commit, so the API has read the order and waits for the lock.
    const step = new Client({ connectionString: database.url });
    const watcher = new Client({ connectionString: database.url });
    await step.connect();
    await watcher.connect();
    try {
      await step.query('BEGIN');
      const {
        rows: [{ pid }],
      } = await step.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await step.query('LOCK TABLE rm_saga IN ACCESS EXCLUSIVE MODE');
      const reading = get(`/orders/${id}`);
      // The API's read of the instance (its select list is its own), held by this lock: no other saga reader.
      await waitFor('the API waiting for the saga instance', async () => {
        const { rows } = await watcher.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND $2 = ANY(pg_blocking_pids(pid)) ` +
            `AND query LIKE '%"timeouts" AS "pendingTimeouts" FROM "rm_saga"%'`,
          [database.name, pid],
        );
        return rows.length > 0;
      });
      await step.query(`UPDATE orders SET shipped_at = shipped_at + interval '1 second' WHERE id = $1`, [id]);
      await step.query(
        `UPDATE rm_saga SET version = version + 1 WHERE saga = 'order-fulfilment' AND correlation_key = $1`,
        [id],
      );
      await step.query('COMMIT');
      const seen = (await reading).body;
      expect([seen.shippedAt, (seen.saga as { version: number }).version]).toEqual([
        before.shippedAt,
        version,
      ]);
      // Read again, both show the commit.
      const after = (await get(`/orders/${id}`)).body;
      expect(after.shippedAt).not.toEqual(before.shippedAt);
      expect((after.saga as { version: number }).version).toBe(version + 1);
    } finally {
      await step.query('ROLLBACK').catch(() => undefined);
      await step.end();
      await watcher.end();
    }
  });

  it(`cancels an order whose payment never comes within PAYMENT_TIMEOUT_MS, and publishes OrderCancelled`, async () => {
    const { body } = await post({ ...ORDER, customerId: SILENT_CUSTOMER_ID });
    const id = body.id as string;
    let order: Record<string, unknown> = {};
    await waitFor('the timeout pending on the saga', async () => {
      order = (await get(`/orders/${id}`)).body;
      return ((order.saga as { pendingTimeouts?: unknown[] } | null)?.pendingTimeouts?.length ?? 0) === 1;
    });
    expect(order).toMatchObject({ status: 'placed', saga: { status: 'active', stage: 'awaiting-payment' } });

    await waitFor(
      () => `order ${id} cancelled (last seen ${JSON.stringify(order)})`,
      async () => {
        order = (await get(`/orders/${id}`)).body;
        return (order.saga as { status?: string } | null)?.status === 'completed';
      },
      { timeoutMs: PAYMENT_TIMEOUT_MS + 15_000 },
    );
    expect(order).toMatchObject({
      status: 'cancelled',
      cancelReason: 'payment-timeout',
      saga: { status: 'completed', stage: 'cancelled', pendingTimeouts: [] },
    });
    expect(
      Date.parse(order.cancelledAt as string) - Date.parse(order.createdAt as string),
    ).toBeGreaterThanOrEqual(PAYMENT_TIMEOUT_MS);
    const cancelled = await waitForMessage(id, 'order.cancelled');
    expect(JSON.parse(cancelled.content.toString())).toMatchObject({
      orderId: id,
      reason: 'payment-timeout',
    });
    expect(await ledgerOf(id)).toEqual({ charges: 0, refunds: 0, voided: true });
  });

  it('refunds the payment of an order shipping cannot deliver, then cancels it (the compensation)', async () => {
    const { body } = await post({ ...ORDER, customerId: UNDELIVERABLE_CUSTOMER_ID });
    const id = body.id as string;
    let order: Record<string, unknown> = {};
    await waitFor(
      () => `order ${id} refunded and cancelled (last seen ${JSON.stringify(order)})`,
      async () => {
        order = (await get(`/orders/${id}`)).body;
        return (order.saga as { status?: string } | null)?.status === 'completed';
      },
      { timeoutMs: 15_000 },
    );
    expect(order).toMatchObject({
      status: 'cancelled',
      cancelReason: 'shipment-failed',
      shippedAt: null,
      receiptSent: false,
      saga: { status: 'completed', stage: 'cancelled', pendingTimeouts: [] },
    });
    expect(
      (order.saga as { history: Array<{ messageType: string }> }).history.map((h) => h.messageType),
    ).toEqual(['order.placed', 'payment.captured', 'order.shipment-failed', 'payment.refunded']);
    const cancelled = await waitForMessage(id, 'order.cancelled');
    expect(JSON.parse(cancelled.content.toString())).toMatchObject({
      orderId: id,
      reason: 'shipment-failed',
    });
    expect(await ledgerOf(id)).toEqual({ charges: 1, refunds: 1, voided: true });
  });

  it.each([
    ['no customer', { items: ORDER.items }, 'customerId should not be empty'],
    ['no items', { customerId: 'c', items: [] }, 'items must contain at least 1 elements'],
    [
      'a fractional quantity',
      { customerId: 'c', items: [{ sku: 'A', quantity: 1.5, unitPrice: 1 }] },
      'items.0.quantity must be an integer number',
    ],
    [
      'a price in fractions of a cent',
      { customerId: 'c', items: [{ sku: 'A', quantity: 1, unitPrice: 0.125 }] },
      'items.0.unitPrice must be a number from 0 to 1000000 with at most 2 decimal places',
    ],
    ['an unknown field', { ...ORDER, discountCents: 500 }, 'property discountCents should not exist'],
  ])('answers 400 naming the field for %s, and stores nothing', async (_case, body, problem) => {
    const before = (await get('/orders/stats')).body.orders;

    const response = await post(body);

    expect(response.status).toBe(400);
    expect(response.body.message).toContain(problem);
    expect((await get('/orders/stats')).body.orders).toBe(before);
  });

  it('answers 400 to a body that is not JSON', async () => {
    const response = await post('{"customerId": ');

    expect(response.status).toBe(400);
  });

  it.each([
    ['an id no order has', randomUUID()],
    ['an id that is not a UUID', 'not-an-order'],
  ])('answers 404 to GET of %s', async (_case, id) => {
    const response = await get(`/orders/${id}`);

    expect(response.status).toBe(404);
    expect(response.body.message).toBe(`order '${id}' not found`);
  });

  it('serves the admin API with ADMIN_TOKEN set: 401 without the token, the queues and parked rows with it', async () => {
    const admin = (path: string, token?: string) =>
      fetch(`${baseUrl}/admin/dead-letters/${path}`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });

    expect((await admin('queues')).status).toBe(401);
    const queues = await admin('queues', ADMIN_TOKEN);
    expect(queues.status).toBe(200);
    // The saga's six steps, the gateway's three, shipping and receipt, the history's four partitions and the
    // activity feed.
    expect(((await queues.json()) as { queues: unknown[] }).queues).toHaveLength(16);
    const parked = await admin('outbox/rows', ADMIN_TOKEN);
    expect(parked.status).toBe(200);
    expect(await parked.json()).toEqual({ rows: [], more: false });
  });

  it('drains and exits with code 0 on SIGTERM', async () => {
    const exit = await app.stop('SIGTERM', 20_000);

    expect(exit).toEqual({ code: 0, signal: null });
    expect(app.lines.some((line) => line.includes('messaging stopped'))).toBe(true);
  });

  it('prints plain text, with no colour codes, under NO_COLOR', () => {
    expect(app.lines.some((line) => line.includes('order service listening on port'))).toBe(true);
    expect(app.lines.join('\n')).not.toContain('\u001b[');
  });
});
