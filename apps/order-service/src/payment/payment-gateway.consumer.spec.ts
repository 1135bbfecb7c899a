import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { TestingModule } from '@nestjs/testing';
import { Injectable } from '@nestjs/common';
import { Consume } from 'nestjs-reliable-messaging';
import { MessagingHarness } from 'nestjs-reliable-messaging/testing';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/test-database';
import { OrderCancelled } from '../messages/order-cancelled.message';
import { OrderPlaced } from '../messages/order-placed.message';
import { OrderShipped } from '../messages/order-shipped.message';
import { PaymentCaptured } from '../messages/payment-captured.message';
import { PaymentRefunded } from '../messages/payment-refunded.message';
import { RefundPayment } from '../messages/refund-payment.message';
import { RequestPayment } from '../messages/request-payment.message';
import { Order } from '../orders/order.entity';
import { FakeReceiptClient } from '../receipt/fake-receipt-client';
import { ReceiptClient } from '../receipt/receipt-client';
import { ReceiptConsumer } from '../receipt/receipt.consumer';
import { createConsumerTestModule } from '../testing/consumer-test-module';
import { Payment } from './payment.entity';
import { PaymentGateway, SILENT_CUSTOMER_ID } from './payment-gateway.consumer';
import { QUEUES } from '../config/messaging-names';

/**
 * Where the gateway's answers go in the app: the order saga's steps. Here a queue of each, so that the relay can
 * route them (an unroutable answer would be parked, holding back the order's later messages).
 */
@Injectable()
class GatewayAnswers {
  @Consume({ queue: 'test.saga.payment-captured', dedup: false })
  onCaptured(_answer: PaymentCaptured): void {}

  @Consume({ queue: 'test.saga.payment-refunded', dedup: false })
  onRefunded(_answer: PaymentRefunded): void {}
}

/**
 * The payment gateway and the receipt consumer on the messaging harness: their own database (the inbox and outbox are its
 * tables) and the in-memory broker, so each outcome shows in milliseconds without RabbitMQ.
 */
describe('the payment gateway and the receipt consumer, on the messaging harness', () => {
  let database: TestDatabase;
  let moduleRef: TestingModule;
  let harness: MessagingHarness;
  let dataSource: DataSource;
  const receipts = new FakeReceiptClient({ latencyMs: 0 });

  beforeAll(async () => {
    database = await createTestDatabase();
    moduleRef = await createConsumerTestModule(database.url, [
      PaymentGateway,
      GatewayAnswers,
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
  const refundsOf = async (orderId: string): Promise<number> => {
    const [{ n }] = await dataSource.query<Array<{ n: number }>>(
      'SELECT count(*)::int AS n FROM refunds WHERE order_id = $1',
      [orderId],
    );
    return n;
  };
  const capturedOf = (placed: OrderPlaced) =>
    harness.waitFor(
      'published',
      (m) => m.type === 'payment.captured' && (m.body as PaymentCaptured).orderId === placed.orderId,
    );
  const requestFor = (placed: OrderPlaced, customerId = placed.customerId): RequestPayment =>
    RequestPayment.of({ orderId: placed.orderId, customerId, amountCents: placed.totalCents });

  it('charges on RequestPayment and answers PaymentCaptured through the outbox', async () => {
    const placed = await placedOrder();

    expect(await harness.deliver(QUEUES.payment, requestFor(placed))).toEqual({ kind: 'acked' });

    expect(await chargesOf(placed.orderId)).toBe(1);
    const captured = await capturedOf(placed);
    expect(captured.body).toMatchObject({ orderId: placed.orderId, amountCents: 4_200 });
  });

  it('skips a second RequestPayment of the same order as a duplicate: one charge', async () => {
    const placed = await placedOrder();
    await harness.deliver(QUEUES.payment, requestFor(placed));

    const again = await harness.deliver(QUEUES.payment, requestFor(placed));

    expect(again).toEqual({ kind: 'duplicate', idempotencyKey: `payment-requested:${placed.orderId}` });
    expect(await chargesOf(placed.orderId)).toBe(1);
  });

  it(`never answers the documented customer '${SILENT_CUSTOMER_ID}': no charge, nothing published`, async () => {
    const placed = await placedOrder();

    expect(await harness.deliver(QUEUES.payment, requestFor(placed, SILENT_CUSTOMER_ID))).toEqual({
      kind: 'acked',
    });

    expect(await chargesOf(placed.orderId)).toBe(0);
    expect(
      harness.published.filter((m) => (m.body as { orderId?: string }).orderId === placed.orderId),
    ).toEqual([]);
  });

  it('charges nothing for a request handled after the order was cancelled (voided)', async () => {
    const placed = await placedOrder();
    const cancelled = OrderCancelled.of(placed.orderId, 'payment-timeout', new Date());

    expect(await harness.deliver(QUEUES.paymentVoid, cancelled)).toEqual({ kind: 'acked' });
    expect(await harness.deliver(QUEUES.payment, requestFor(placed))).toEqual({ kind: 'acked' });

    expect(await chargesOf(placed.orderId)).toBe(0);
  });

  it('refunds a charge made before the cancellation came, and refunds it once whatever asks again', async () => {
    const placed = await placedOrder();
    await harness.deliver(QUEUES.payment, requestFor(placed));
    const captured = await capturedOf(placed);

    await harness.deliver(
      QUEUES.paymentVoid,
      OrderCancelled.of(placed.orderId, 'payment-timeout', new Date()),
    );
    await harness.deliver(
      QUEUES.refund,
      RefundPayment.of(placed.orderId, (captured.body as PaymentCaptured).paymentId),
    );

    expect(await chargesOf(placed.orderId)).toBe(1);
    expect(await refundsOf(placed.orderId)).toBe(1);
  });

  it('refunds a payment on RefundPayment and answers PaymentRefunded', async () => {
    const placed = await placedOrder();
    await harness.deliver(QUEUES.payment, requestFor(placed));
    const captured = await capturedOf(placed);
    const { paymentId } = captured.body as PaymentCaptured;

    expect(await harness.deliver(QUEUES.refund, RefundPayment.of(placed.orderId, paymentId))).toEqual({
      kind: 'acked',
    });
    const refunded = await harness.waitFor(
      'published',
      (m) => m.type === 'payment.refunded' && (m.body as PaymentRefunded).orderId === placed.orderId,
    );
    expect(refunded.body).toMatchObject({ paymentId, amountCents: 4_200 });
    expect(await refundsOf(placed.orderId)).toBe(1);
  });

  it('dead-letters a RequestPayment whose payload is invalid, at once and without charging', async () => {
    const placed = await placedOrder();
    const invalid = RequestPayment.of({ ...requestFor(placed), amountCents: -1 });

    const outcome = await harness.deliver(QUEUES.payment, invalid);

    expect(outcome).toMatchObject({ kind: 'dead-lettered', reason: 'validation-failed', attempts: 1 });
    expect(await chargesOf(placed.orderId)).toBe(0);
  });

  it('retries a receipt when the receipt service fails, and sends it once the retry comes round', async () => {
    const orderId = randomUUID();
    const paymentId = randomUUID();
    const paidAt = new Date();
    await dataSource.getRepository(Order).insert({
      id: orderId,
      customerId: 'customer-2',
      status: 'shipped',
      totalCents: 900,
      paymentId,
      paidAt,
    });
    const shipped = OrderShipped.of({ orderId, amountCents: 900, shippedAt: paidAt.toISOString() });
    // Receipts of orders paid in earlier cases may still be on their way: the failure and the count are this order's.
    receipts.failNext(1, orderId);

    const failed = await harness.deliver(QUEUES.receipt, shipped);
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
