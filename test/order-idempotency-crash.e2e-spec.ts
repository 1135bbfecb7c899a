import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { ChildApp } from './support/child-app';
import { OrderServiceApp } from './support/order-service-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

const ORDER = { customerId: 'customer-crash', items: [{ sku: 'BOOK-DDIA', quantity: 2, unitPrice: 19.99 }] };

describe('Idempotency-Key across a kill -9 after the commit: one order and one payment', () => {
  let database: TestDatabase;
  let broker: TestBroker;
  let sql: Client;

  beforeAll(async () => {
    database = await createTestDatabase();
    broker = await TestBroker.connect();
    sql = new Client({ connectionString: database.url });
  });

  afterAll(async () => {
    await sql?.end();
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
  });

  it("answers the client's retry after the crash with the committed order, which is paid once", async () => {
    const key = randomUUID();
    const crashing = await OrderServiceApp.start(database, broker, {
      FAULT_POINTS: '1',
      FAULT_KILL_AFTER_COMMIT: '1',
    });

    const lost = await crashing.postOrder(ORDER, { 'idempotency-key': key }).then(
      (answer) => ({ answered: answer.status }),
      (error: unknown) => ({ failed: error instanceof Error ? error.message : String(error) }),
    );

    expect(lost).toEqual({ failed: expect.any(String) });
    expect(await crashing.process.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
    expect(crashing.process.lines.some((line) => line.includes('killing the process after the commit'))).toBe(
      true,
    );
    await sql.connect();
    const committed = await sql.query<{ id: string }>('SELECT id FROM orders WHERE customer_id = $1', [
      ORDER.customerId,
    ]);
    expect(committed.rows).toHaveLength(1);
    const orderId = committed.rows[0].id;

    const restarted = await OrderServiceApp.start(database, broker);
    const retry = await restarted.postOrder(ORDER, { 'idempotency-key': key });

    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ id: orderId, customerId: ORDER.customerId, totalCents: 3998 });
    // Shipped means OrderPaid was relayed and consumed; the outbox empty and the saga's queue drained mean no
    // copy of OrderPlaced (the crashed relay's, say) is still on its way to charge again.
    let seen = '';
    await waitFor(
      () => `order ${orderId} shipped, the outbox relayed and the saga's queue drained (last seen ${seen})`,
      async () => {
        const status = (await restarted.get(`/orders/${orderId}`)).body.status;
        const pending = await sql.query(`SELECT 1 FROM rm_outbox WHERE status = 'pending'`);
        const queued = await broker.queueDepth(`${broker.prefix}.order-saga.order-placed`);
        seen = `${String(status)}, ${pending.rowCount} pending, ${queued} queued`;
        return status === 'shipped' && pending.rowCount === 0 && queued === 0;
      },
      { timeoutMs: 20_000 },
    );
    const orders = await sql.query('SELECT 1 FROM orders WHERE customer_id = $1', [ORDER.customerId]);
    const payments = await sql.query('SELECT 1 FROM payments WHERE order_id = $1', [orderId]);
    expect(orders.rowCount).toBe(1);
    expect(payments.rowCount).toBe(1);
  });
});
