import type { PoolClient } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import type { ReceiptClient } from '../../../apps/order-service/src/receipt/receipt-client';
import { UnusableMessageError, type DecodedMessage, type TransactionalWork } from '../transactional-consumer';
import { orderShipped, paymentCaptured, writeToOutbox } from './order-events';

/** What the consumers' work needs besides the message: where events go, the receipt service, the saga's timeout. */
export interface OrderFlowContext {
  appId: string;
  exchange: string;
  receipts: ReceiptClient;
  /** How long the saga waits for an order's payment: its PaymentTimedOut is scheduled this far ahead. */
  paymentTimeoutMs: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The message's order id; a message without a usable one is refused, not retried. */
export function orderIdOf(message: DecodedMessage): string {
  const { orderId } = message.body;
  if (typeof orderId !== 'string' || !UUID.test(orderId)) {
    throw new UnusableMessageError(`message ${message.messageId} has no order id`);
  }
  return orderId;
}

/** An amount in cents the message carries in `field`; a message without one is refused, not retried. */
export function amountOf(message: DecodedMessage, field: string): number {
  const amount = message.body[field];
  if (!Number.isInteger(amount) || (amount as number) < 0) {
    throw new UnusableMessageError(`message ${message.messageId} has no ${field}`);
  }
  return amount as number;
}

/** The order is not there yet, or not in the state the message says: retried after a pause. */
export class OrderNotReadyError extends Error {
  override readonly name = 'OrderNotReadyError';
}

/** Serialises the gateway's work for one order, as the app's gateway does (a charge and a void must not race). */
const LOCK_ORDER = 'SELECT pg_advisory_xact_lock(hashtextextended($1, 7305))';

/**
 * The payment gateway, on RequestPayment, in the message's transaction with its inbox row: under the order's
 * advisory lock, a request whose order was voided charges nothing; else a charge in the ledger and
 * PaymentCaptured to the saga. As in the app, every run that commits charges: only the inbox keeps it to one.
 */
export function paymentGatewayWork(context: OrderFlowContext): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const amountCents = amountOf(message, 'amountCents');
    await client.query({ name: 'hw_payment_lock', text: LOCK_ORDER, values: [orderId] });
    const voided = await client.query({
      name: 'hw_payment_voided',
      text: 'SELECT 1 FROM hw_payment_voids WHERE order_id = $1',
      values: [orderId],
    });
    if (voided.rowCount !== 0) return;
    const paymentId = uuidv7();
    const { rows } = await client.query<{ charged_at: Date }>({
      name: 'hw_payment_charge',
      text: 'INSERT INTO hw_payments (id, order_id, amount_cents, message_id) VALUES ($1, $2, $3, $4) RETURNING charged_at',
      values: [paymentId, orderId, amountCents, message.messageId],
    });
    await writeToOutbox(client, context.exchange, [
      paymentCaptured(
        { orderId, paymentId, amountCents, capturedAt: rows[0].charged_at },
        message,
        context.appId,
      ),
    ]);
  };
}

/** Ships the order if it is paid, and reads it as it is after the update either way, in one statement. */
const SHIP_ORDER =
  `WITH shipped AS (UPDATE hw_orders SET status = 'shipped', shipped_at = now() WHERE id = $1 AND status = 'paid' ` +
  'RETURNING id, status, total_cents, shipped_at) SELECT status, total_cents, shipped_at FROM shipped UNION ALL ' +
  'SELECT status, total_cents, shipped_at FROM hw_orders WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM shipped)';

/**
 * Shipping, on OrderPaid, in the message's transaction with its inbox row: ships the order if it is paid and
 * sends OrderShipped (to the saga and the receipt). A copy that got past the inbox ships nothing twice and sends
 * OrderShipped again, which its consumers' inboxes drop; a cancelled order is never shipped; an order not paid
 * yet is retried.
 */
export function shippingWork(context: OrderFlowContext): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const { rows } = await client.query<{ status: string; total_cents: string; shipped_at: Date | null }>({
      name: 'hw_shipping_ship',
      text: SHIP_ORDER,
      values: [orderId],
    });
    const order = rows[0];
    if (order?.status === 'shipped' && order.shipped_at !== null) {
      await writeToOutbox(client, context.exchange, [
        orderShipped(
          { orderId, amountCents: Number(order.total_cents), shippedAt: order.shipped_at },
          message,
          context.appId,
        ),
      ]);
      return;
    }
    if (order?.status === 'cancelled') return;
    throw new OrderNotReadyError(`order ${orderId} is not paid yet`);
  };
}

/**
 * The receipt, on OrderShipped, in the message's transaction with its inbox row: an order without a receipt gets one from the
 * receipt service, called with the idempotency key `receipt:<orderId>` (a retry after the service answered gets
 * the same receipt back), and the receipt is stamped on the order.
 */
export function receiptWork(context: OrderFlowContext): TransactionalWork {
  return async (client, message) => {
    const orderId = orderIdOf(message);
    const amountCents = amountOf(message, 'amountCents');
    const { rows } = await client.query<{ customer_id: string; receipt_id: string | null }>({
      name: 'hw_receipt_read_order',
      text: 'SELECT customer_id, receipt_id FROM hw_orders WHERE id = $1',
      values: [orderId],
    });
    const order = rows[0];
    if (!order) throw new OrderNotReadyError(`order ${orderId} not found`);
    if (order.receipt_id !== null) return;
    const receipt = await context.receipts.send(
      { orderId, customerId: order.customer_id, amountCents },
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
