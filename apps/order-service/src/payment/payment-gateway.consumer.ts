import { Injectable, Logger } from '@nestjs/common';
import { Consume, Publish, type MessageContext } from 'nestjs-reliable-messaging';
import { v7 as uuidv7 } from 'uuid';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderCancelled } from '../messages/order-cancelled.message';
import { PaymentCaptured } from '../messages/payment-captured.message';
import { PaymentRefunded } from '../messages/payment-refunded.message';
import { RefundPayment } from '../messages/refund-payment.message';
import { RequestPayment } from '../messages/request-payment.message';

/**
 * The customer the stand-in gateway never answers: an order placed for this customer id waits for its payment
 * until the order saga's `PAYMENT_TIMEOUT_MS` cancels it, so anyone can watch the timeout happen.
 */
export const SILENT_CUSTOMER_ID = 'customer-never-pays';

/**
 * Serialises the gateway's handlers for one order (a charge, its void and its refund), for their transaction: a
 * charge and a void racing could otherwise each miss the other and leave a cancelled order charged.
 */
const LOCK_ORDER = `SELECT pg_advisory_xact_lock(hashtextextended($1, 7305))`;

const VOIDED = 'SELECT 1 FROM payment_voids WHERE order_id = $1';

const CHARGE =
  'INSERT INTO payments (id, order_id, amount_cents, message_id) VALUES ($1, $2, $3, $4) RETURNING charged_at';

const REFUND =
  'INSERT INTO refunds (payment_id, order_id, amount_cents) SELECT id, order_id, amount_cents FROM payments ' +
  'WHERE id = $1 AND order_id = $2 ON CONFLICT (payment_id) DO NOTHING';

const REFUNDED =
  'SELECT r.payment_id, r.amount_cents, r.refunded_at FROM refunds r WHERE r.payment_id = $1 AND r.order_id = $2';

const VOID = 'INSERT INTO payment_voids (order_id) VALUES ($1) ON CONFLICT (order_id) DO NOTHING';

/** Refunds every charge of the order not refunded yet: a charge made before its void arrived. */
const REFUND_ALL =
  'INSERT INTO refunds (payment_id, order_id, amount_cents) SELECT id, order_id, amount_cents FROM payments ' +
  'WHERE order_id = $1 ON CONFLICT (payment_id) DO NOTHING RETURNING payment_id';

/**
 * A stand-in payment gateway, answering the order saga's commands: RequestPayment charges the customer (a row in
 * the payments ledger) and answers PaymentCaptured; RefundPayment refunds a charge and answers PaymentRefunded;
 * OrderCancelled voids the order's payment request, so a request handled after the cancellation charges
 * nothing, and refunds a charge made before it. Each handler's writes, what it publishes and its inbox row commit
 * in one transaction.
 */
@Injectable()
export class PaymentGateway {
  private readonly logger = new Logger('PaymentGateway');

  @Consume({ queue: QUEUES.payment, concurrency: 8 })
  @Publish()
  async onRequestPayment(command: RequestPayment, ctx: MessageContext): Promise<PaymentCaptured | undefined> {
    if (command.customerId === SILENT_CUSTOMER_ID) {
      this.logger.log(`order ${command.orderId}: never answering customer '${SILENT_CUSTOMER_ID}'`);
      return undefined;
    }
    const transaction = handlerTransaction(ctx);
    await transaction.query(LOCK_ORDER, [command.orderId]);
    const voided = await transaction.query<unknown[]>(VOIDED, [command.orderId]);
    if (voided.length > 0) {
      this.logger.log(`order ${command.orderId}: payment request voided by the order's cancellation`);
      return undefined;
    }
    // Every run that commits charges, as a payment provider would: only the inbox keeps it to one per order, and
    // the ledger (no unique key on order_id) shows it if it did not.
    const paymentId = uuidv7();
    const [charge] = await transaction.query<Array<{ charged_at: Date }>>(CHARGE, [
      paymentId,
      command.orderId,
      command.amountCents,
      ctx.envelope.messageId,
    ]);
    return PaymentCaptured.of({
      orderId: command.orderId,
      paymentId,
      amountCents: command.amountCents,
      capturedAt: charge.charged_at.toISOString(),
    });
  }

  @Consume({ queue: QUEUES.refund, concurrency: 2 })
  @Publish()
  async onRefundPayment(command: RefundPayment, ctx: MessageContext): Promise<PaymentRefunded | undefined> {
    const transaction = handlerTransaction(ctx);
    await transaction.query(LOCK_ORDER, [command.orderId]);
    await transaction.query(REFUND, [command.paymentId, command.orderId]);
    const [refund] = await transaction.query<
      Array<{ payment_id: string; amount_cents: string; refunded_at: Date }>
    >(REFUNDED, [command.paymentId, command.orderId]);
    if (!refund) {
      this.logger.warn(`order ${command.orderId}: no payment ${command.paymentId} to refund`);
      return undefined;
    }
    return PaymentRefunded.of({
      orderId: command.orderId,
      paymentId: refund.payment_id,
      amountCents: Number(refund.amount_cents),
      refundedAt: refund.refunded_at.toISOString(),
    });
  }

  @Consume({ queue: QUEUES.paymentVoid, concurrency: 2 })
  async onOrderCancelled(event: OrderCancelled, ctx: MessageContext): Promise<void> {
    const transaction = handlerTransaction(ctx);
    await transaction.query(LOCK_ORDER, [event.orderId]);
    await transaction.query(VOID, [event.orderId]);
    const refunded = await transaction.query<unknown[]>(REFUND_ALL, [event.orderId]);
    if (refunded.length > 0) {
      this.logger.log(
        `order ${event.orderId}: refunded ${refunded.length} charge(s) made before its cancellation`,
      );
    }
  }
}
