import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { GetMessage } from 'amqplib';
import { Client } from 'pg';
import { ChildApp } from './support/child-app';
import { OrderServiceApp } from './support/order-service-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

const ORDER = {
  customerId: 'customer-7',
  items: [
    { sku: 'BOOK-DDIA', quantity: 2, unitPrice: 19.99 },
    { sku: 'MUG-RABBIT', quantity: 1, unitPrice: 5 },
  ],
};

const ADMIN_TOKEN = 'bfc946aa4005abd37bd025340ca21baed8e6e6d3';

describe('order flow: the order service as a process, against the real RabbitMQ and PostgreSQL', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let app: ChildApp;
  let baseUrl: string;
  let auditQueue: string;

  const queues = (prefix: string) =>
    ['payment.order-placed', 'shipping.order-paid', 'receipt.order-paid'].map(
      (queue) => `${prefix}.${queue}`,
    );

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

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    ({ process: app, baseUrl } = await OrderServiceApp.start(database, broker, { ADMIN_TOKEN }));
    auditQueue = broker.name('audit');
    const channel = await broker.openChannel();
    await channel.assertQueue(auditQueue, { durable: false });
    await channel.bindQueue(auditQueue, `${broker.prefix}.events`, 'order.#');
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

  it('emits OrderPlaced and OrderPaid keyed by order, OrderPaid caused by OrderPlaced in the same correlation', async () => {
    const { body } = await post(ORDER);
    const id = body.id as string;
    const mine: GetMessage[] = [];
    const ofType = (type: string) => mine.find((message) => message.properties.type === type);
    await waitFor(
      () => `OrderPlaced and OrderPaid of order ${id} on ${auditQueue} (saw ${mine.length})`,
      async () => {
        const arrived = await broker.getAll(auditQueue);
        mine.push(
          ...arrived.filter(
            (message) => (JSON.parse(message.content.toString()) as { orderId: string }).orderId === id,
          ),
        );
        return ofType('order.placed') !== undefined && ofType('order.paid') !== undefined;
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
      'rm-causation-id': placed.properties.messageId as string,
    });
    // The flow's first message is its own correlation id, left off the wire (docs/envelope.md).
    expect(placed.properties.correlationId).toBeUndefined();
    expect(paid.properties.correlationId).toBe(placed.properties.messageId);
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
    // Payment, shipping and receipt, the history's four partitions and the activity feed.
    expect(((await queues.json()) as { queues: unknown[] }).queues).toHaveLength(8);
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
