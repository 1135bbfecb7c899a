import type { PoolClient } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import type { ReceiptClient } from '../../../apps/order-service/src/receipt/receipt-client';
import { UnusableMessageError, type DecodedMessage, type TransactionalWork } from '../transactional-consumer';
import { orderPaid, statusChanged, writeToOutbox } from './order-events';

/** What the consumers' work needs besides the message: where events go, and the receipt service. */
export interface OrderFlowContext {
  appId: string;
  exchange: string;
  receipts: ReceiptClient;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The message's order id; a message without a usable one is refused, not retried. */
function orderIdOf(message: DecodedMessage): string {
  const { orderId } = message.body;
  if (typeof orderId !== 'string' || !UUID.test(orderId)) {
    throw new UnusableMessageError(`message ${message.messageId} has no order id`);
  }
  return orderId;
}

/** The order is not there yet, or not in the state the message says: retried after a pause. */
class OrderNotReadyError extends Error {
  override readonly name = 'OrderNotReadyError';
}

/**
 * Payment, in the message's transaction with its inbox row: marks the order paid if it is placed, records a
 * charge in the ledger and writes OrderPaid and the `paid` status change to the outbox. As in the app, every run
 * that commits charges (the order's update is idempotent, the charge is not): only the inbox keeps it to one.
 */
export function paymentWork(context: OrderFlowContext): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const paymentId = uuidv7();
    await client.query({
      name: 'hw_payment_mark_paid',
      text: `UPDATE hw_orders SET status = 'paid', payment_id = $2, paid_at = now() WHERE id = $1 AND status = 'placed'`,
      values: [orderId, paymentId],
    });
    const { rows } = await client.query<{
      total_cents: string;
      payment_id: string | null;
      paid_at: Date | null;
    }>({
      name: 'hw_payment_read_order',
      text: 'SELECT total_cents, payment_id, paid_at FROM hw_orders WHERE id = $1',
      values: [orderId],
    });
    const order = rows[0];
    if (!order) throw new OrderNotReadyError(`order ${orderId} not found`);
    if (order.payment_id === null || order.paid_at === null) {
      throw new Error(`order ${orderId} has no payment recorded`);
    }
    await client.query({
      name: 'hw_payment_insert',
      text: 'INSERT INTO hw_payments (id, order_id, amount_cents, message_id) VALUES ($1, $2, $3, $4)',
      values: [paymentId, orderId, order.total_cents, message.messageId],
    });
    // An order already paid (a copy that got past the inbox) sends its events again from the stored payment;
    // their consumers' inboxes drop them.
    const paid = {
      orderId,
      paymentId: order.payment_id,
      amountCents: Number(order.total_cents),
      paidAt: order.paid_at,
    };
    await writeToOutbox(client, context.exchange, [
      orderPaid(paid, message, context.appId),
      statusChanged(orderId, 'paid', order.paid_at, message, context.appId),
    ]);
  };
}

/**
 * Shipping, idempotent by itself as in the app (no inbox): OrderPaid only says which order changed, and one
 * conditional update ships it if it is paid. Nothing updated: already shipped is done; placed or missing means
 * the payment is not visible yet, retried.
 */
export function shippingWork(): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const shipped = await client.query({
      name: 'hw_shipping_ship',
      text: `UPDATE hw_orders SET status = 'shipped', shipped_at = now() WHERE id = $1 AND status = 'paid'`,
      values: [orderId],
    });
    if (shipped.rowCount === 1) return;
    const { rows } = await client.query<{ status: string }>({
      name: 'hw_shipping_read_status',
      text: 'SELECT status FROM hw_orders WHERE id = $1',
      values: [orderId],
    });
    if (rows[0]?.status !== 'shipped') throw new OrderNotReadyError(`order ${orderId} is not paid yet`);
  };
}

/**
 * The receipt, in the message's transaction with its inbox row: an order without a receipt gets one from the
 * receipt service, called with the idempotency key `receipt:<orderId>` (a retry after the service answered gets
 * the same receipt back), and the receipt is stamped on the order.
 */
export function receiptWork(context: OrderFlowContext): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const { amountCents } = message.body;
    if (!Number.isInteger(amountCents))
      throw new UnusableMessageError(`message ${message.messageId} has no amount`);
    const { rows } = await client.query<{ customer_id: string; receipt_id: string | null }>({
      name: 'hw_receipt_read_order',
      text: 'SELECT customer_id, receipt_id FROM hw_orders WHERE id = $1',
      values: [orderId],
    });
    const order = rows[0];
    if (!order) throw new OrderNotReadyError(`order ${orderId} not found`);
    if (order.receipt_id !== null) return;
    const receipt = await context.receipts.send(
      { orderId, customerId: order.customer_id, amountCents: amountCents as number },
      { idempotencyKey: `receipt:${orderId}` },
    );
    await client.query({
      name: 'hw_receipt_stamp',
      text: 'UPDATE hw_orders SET receipt_id = $2, receipt_sent_at = $3 WHERE id = $1 AND receipt_id IS NULL',
      values: [orderId, receipt.receiptId, receipt.sentAt],
    });
  };
}

/** The order history or the activity feed, in the message's transaction with its inbox row: one entry per change. */
export function historyWork(recorder: 'history' | 'activity'): TransactionalWork {
  return async (client: PoolClient, message) => {
    const orderId = orderIdOf(message);
    const { status, sequence } = message.body;
    if (typeof status !== 'string' || !Number.isInteger(sequence)) {
      throw new UnusableMessageError(`message ${message.messageId} has no status or sequence`);
    }
    await client.query({
      name: 'hw_history_insert',
      text: 'INSERT INTO hw_order_history (recorder, order_id, status, sequence) VALUES ($1, $2, $3, $4)',
      values: [recorder, orderId, status, sequence],
    });
  };
}
