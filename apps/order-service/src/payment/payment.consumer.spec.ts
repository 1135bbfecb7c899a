import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { TestingModule } from '@nestjs/testing';
import { MessagingHarness } from 'nestjs-reliable-messaging/testing';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/test-database';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderPlaced } from '../messages/order-placed.message';
import { Order } from '../orders/order.entity';
import { FakeReceiptClient } from '../receipt/fake-receipt-client';
import { ReceiptClient } from '../receipt/receipt-client';
import { ReceiptConsumer } from '../receipt/receipt.consumer';
import { createConsumerTestModule } from '../testing/consumer-test-module';
import { Payment } from './payment.entity';
import { PaymentConsumer } from './payment.consumer';
import { QUEUES } from '../config/messaging-names';

/**
 * The payment and receipt consumers on the messaging harness: their own database (the inbox and outbox are its
 * tables) and the in-memory broker, so each outcome shows in milliseconds without RabbitMQ.
 */
describe('the payment and receipt consumers, on the messaging harness', () => {
  let database: TestDatabase;
  let moduleRef: TestingModule;
  let harness: MessagingHarness;
  let dataSource: DataSource;
  const receipts = new FakeReceiptClient({ latencyMs: 0 });

  beforeAll(async () => {
    database = await createTestDatabase();
    moduleRef = await createConsumerTestModule(database.url, [
      PaymentConsumer,
      ReceiptConsumer,
      { provide: ReceiptClient, useValue: receipts },
    ]);
    harness = moduleRef.get(MessagingHarness);
    dataSource = moduleRef.get(DataSource);
  });

  afterAll(async () => {
    await moduleRef?.close();
    await database?.drop();
  });

  beforeEach(() => harness.reset());

  async function placedOrder(totalCents = 4_200): Promise<OrderPlaced> {
    const orderId = randomUUID();
    await dataSource
      .getRepository(Order)
      .insert({ id: orderId, customerId: 'customer-1', status: 'placed', totalCents });
    return OrderPlaced.of({
      orderId,
      customerId: 'customer-1',
      totalCents,
      itemCount: 1,
      placedAt: new Date().toISOString(),
    });
  }

  const chargesOf = (orderId: string) => dataSource.getRepository(Payment).countBy({ orderId });

  it('charges a placed order and emits OrderPaid through the outbox', async () => {
    const placed = await placedOrder();

    expect(await harness.deliver(QUEUES.payment, placed)).toEqual({ kind: 'acked' });

    expect(await chargesOf(placed.orderId)).toBe(1);
    const paid = await harness.waitFor(
      'published',
      (m) => m.type === 'order.paid' && (m.body as OrderPaid).orderId === placed.orderId,
    );
    expect(paid.body).toMatchObject({ orderId: placed.orderId, amountCents: 4_200 });
  });

  it('skips a second OrderPlaced of the same order as a duplicate: one charge', async () => {
    const placed = await placedOrder();
    await harness.deliver(QUEUES.payment, placed);

    const again = await harness.deliver(QUEUES.payment, placed);

    expect(again).toEqual({ kind: 'duplicate', idempotencyKey: `order-placed:${placed.orderId}` });
    expect(await chargesOf(placed.orderId)).toBe(1);
  });

  it('dead-letters an OrderPlaced whose payload is invalid, at once and without charging', async () => {
    const placed = await placedOrder();
    const invalid = OrderPlaced.of({ ...placed, totalCents: -1 });

    const outcome = await harness.deliver(QUEUES.payment, invalid);

    expect(outcome).toMatchObject({ kind: 'dead-lettered', reason: 'validation-failed', attempts: 1 });
    expect(await chargesOf(placed.orderId)).toBe(0);
  });

  it('retries an OrderPlaced for an order not visible yet, as OrderNotFoundError is retryable', async () => {
    const unknown = OrderPlaced.of({
      orderId: randomUUID(),
      customerId: 'customer-1',
      totalCents: 100,
      itemCount: 1,
      placedAt: new Date().toISOString(),
    });

    const outcome = await harness.deliver(QUEUES.payment, unknown);

    expect(outcome).toMatchObject({ kind: 'retried', nextAttempt: 2 });
  });

  it('retries a receipt when the receipt service fails, and sends it once the retry comes round', async () => {
    const orderId = randomUUID();
    const paymentId = randomUUID();
    const paidAt = new Date();
    await dataSource.getRepository(Order).insert({
      id: orderId,
      customerId: 'customer-2',
      status: 'paid',
      totalCents: 900,
      paymentId,
      paidAt,
    });
    const paid = OrderPaid.of({ orderId, paymentId, amountCents: 900, paidAt: paidAt.toISOString() });
    // Receipts of orders paid in earlier cases may still be on their way: the failure and the count are this order's.
    receipts.failNext(1, orderId);

    const failed = await harness.deliver(QUEUES.receipt, paid);
    expect(failed).toMatchObject({ kind: 'retried', nextAttempt: 2 });
    if (failed.kind !== 'retried') return;
    await harness.advance(failed.delayMs);

    const retried = await harness.waitFor('consumed', (d) => d.queue === QUEUES.receipt && d.attempt === 2);
    expect(retried.outcome).toEqual({ kind: 'acked' });
    const sent = receipts.sentUnder(`receipt:${orderId}`);
    expect(sent).toBeDefined();
    const order = await dataSource.getRepository(Order).findOneByOrFail({ id: orderId });
    expect(order.receiptId).toBe(sent?.receiptId);
  });

  it('publishes nothing from a transaction that rolls back, and what a committed one wrote', async () => {
    const rolledBack = await placedOrder();
    const committed = await placedOrder();

    await expect(
      dataSource.transaction(async (manager) => {
        await harness.publish(rolledBack, { manager });
        throw new Error('the order could not be saved');
      }),
    ).rejects.toThrow('the order could not be saved');
    await dataSource.transaction((manager) => harness.publish(committed, { manager }));

    // The rolled-back message was written first: had its row survived, the relay would have sent it by now.
    await harness.waitFor('published', (m) => (m.body as OrderPlaced).orderId === committed.orderId);
    expect(harness.published.filter((m) => (m.body as OrderPlaced).orderId === rolledBack.orderId)).toEqual(
      [],
    );
  });
});
