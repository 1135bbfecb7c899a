import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { ChildApp } from './support/child-app';
import { OrderServiceApp } from './support/order-service-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';

/** An order of its own customer, so each test counts only its own orders. */
function orderFor(customerId: string, quantity = 1) {
  return { customerId, items: [{ sku: 'BOOK-DDIA', quantity, unitPrice: 19.99 }] };
}

describe('POST /orders with an Idempotency-Key: the order service as a process, against the real services', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let app: OrderServiceApp;
  let sql: Client;

  async function countOrders(customerId: string): Promise<number> {
    const { rows } = await sql.query<{ n: string }>(
      'SELECT count(*) AS n FROM orders WHERE customer_id = $1',
      [customerId],
    );
    return Number(rows[0].n);
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    app = await OrderServiceApp.start(database, broker);
    sql = new Client({ connectionString: database.url });
    await sql.connect();
  });

  afterAll(async () => {
    await sql?.end();
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
  });

  it('answers a retry with the same key and body with the first 201 and order id, replayed, and makes one order', async () => {
    const customer = `c-${randomUUID()}`;
    const key = randomUUID();

    const first = await app.postOrder(orderFor(customer), { 'idempotency-key': `"${key}"` });
    const retry = await app.postOrder(orderFor(customer), { 'idempotency-key': `"${key}"` });

    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(await countOrders(customer)).toBe(1);
    const { rows } = await sql.query<{ status: number; body: string; ttl_hours: number }>(
      `SELECT response_status AS status, response_body AS body,
              extract(epoch FROM expires_at - created_at) / 3600 AS ttl_hours
         FROM rm_idempotency_keys WHERE idempotency_key = $1`,
      [key],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].status).toBe(201);
    expect(JSON.parse(rows[0].body)).toMatchObject({ id: first.body.id });
    expect(Number(rows[0].ttl_hours)).toBeCloseTo(24, 3);
  });

  it("commits the key in the order's own transaction (the two rows share their xmin)", async () => {
    const customer = `c-${randomUUID()}`;
    const key = randomUUID();

    const placed = await app.postOrder(orderFor(customer), { 'idempotency-key': key });

    const { rows } = await sql.query<{ same: boolean }>(
      `SELECT o.xmin::text = k.xmin::text AS same FROM orders o, rm_idempotency_keys k
        WHERE o.id = $1 AND k.idempotency_key = $2`,
      [placed.body.id, key],
    );
    expect(rows).toEqual([{ same: true }]);
  });

  it('takes a bare (unquoted) key as the same key as its quoted form', async () => {
    const customer = `c-${randomUUID()}`;
    const key = randomUUID();

    const first = await app.postOrder(orderFor(customer), { 'idempotency-key': key });
    const retry = await app.postOrder(orderFor(customer), { 'idempotency-key': `"${key}"` });

    expect(retry.body.id).toBe(first.body.id);
    expect(await countOrders(customer)).toBe(1);
  });

  it('answers 422 to the same key with another body, and makes no second order', async () => {
    const customer = `c-${randomUUID()}`;
    const key = randomUUID();
    await app.postOrder(orderFor(customer), { 'idempotency-key': key });

    const other = await app.postOrder(orderFor(customer, 2), { 'idempotency-key': key });

    expect(other.status).toBe(422);
    expect(other.body.message).toEqual([
      expect.stringContaining('Idempotency-Key was used for a different request (POST /orders'),
    ]);
    expect(await countOrders(customer)).toBe(1);
  });

  it('makes exactly one order of 5 requests with one key sent at once, and answers each with its id', async () => {
    const customer = `c-${randomUUID()}`;
    const key = randomUUID();

    const answers = await Promise.all(
      Array.from({ length: 5 }, () => app.postOrder(orderFor(customer), { 'idempotency-key': key })),
    );

    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(4);
    expect(await countOrders(customer)).toBe(1);
  });

  it('does not keep the key of a request that failed: the corrected retry with the same key places the order', async () => {
    const customer = `c-${randomUUID()}`;
    const key = randomUUID();

    const refused = await app.postOrder({ customerId: customer, items: [] }, { 'idempotency-key': key });
    const corrected = await app.postOrder(orderFor(customer), { 'idempotency-key': key });

    expect(refused.status).toBe(400);
    expect(corrected.status).toBe(201);
    expect(corrected.headers.get('idempotent-replayed')).toBeNull();
    expect(await countOrders(customer)).toBe(1);
  });

  it.each([
    [
      'longer than 255 characters',
      'k'.repeat(256),
      'Idempotency-Key must be at most 255 characters; got 256',
    ],
    ['an empty quoted string', '""', 'Idempotency-Key must not be empty'],
    ['an unterminated quoted string', '"abc', 'Idempotency-Key must be a string, quoted as'],
    ['a non-ASCII character', 'cl\u00e9', 'Idempotency-Key must hold printable ASCII characters only'],
  ])('answers 400 to a key %s, and makes no order', async (_case, key, problem) => {
    const customer = `c-${randomUUID()}`;

    const answer = await app.postOrder(orderFor(customer), { 'idempotency-key': key });

    expect(answer.status).toBe(400);
    expect(answer.body.message).toEqual([expect.stringContaining(problem)]);
    expect(await countOrders(customer)).toBe(0);
  });

  it('places an order for each request without a key, as before', async () => {
    const customer = `c-${randomUUID()}`;

    const first = await app.postOrder(orderFor(customer));
    const second = await app.postOrder(orderFor(customer));

    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.id).not.toBe(first.body.id);
    expect(await countOrders(customer)).toBe(2);
  });
});
