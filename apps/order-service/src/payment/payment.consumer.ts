import { Injectable } from '@nestjs/common';
import { Consume, Publish, type MessageContext } from 'nestjs-reliable-messaging';
import { v7 as uuidv7 } from 'uuid';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderStatusChanged } from '../messages/order-status-changed.message';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderPlaced } from '../messages/order-placed.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';

/** An order as PAY_ORDER reads it; `total_cents` is a bigint, which the driver returns as a string. */
interface PaidOrderRow {
  id: string;
  status: string;
  total_cents: string;
  payment_id: string | null;
  paid_at: Date | null;
}

const PAY_ORDER =
  `WITH paid AS (UPDATE orders SET status = 'paid', payment_id = $2, paid_at = now() ` +
  `WHERE id = $1 AND status = 'placed' RETURNING id, status, total_cents, payment_id, paid_at) ` +
  'SELECT id, status, total_cents, payment_id, paid_at FROM paid UNION ALL ' +
  'SELECT id, status, total_cents, payment_id, paid_at FROM orders WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM paid)';

const CHARGE = 'INSERT INTO payments (id, order_id, amount_cents, message_id) VALUES ($1, $2, $3, $4)';

/**
 * Takes payment for placed orders (a stand-in: every payment succeeds) and emits OrderPaid. The charge (a row in
 * the payments ledger), the order's update (both through `ctx.manager`), the OrderPaid it returns and the inbox row that
 * marks OrderPlaced as handled commit together in the transaction the module opens for the handler, so a
 * redelivered OrderPlaced is skipped, never charged twice.
 */
@Injectable()
export class PaymentConsumer {
  @Consume({ queue: QUEUES.payment, concurrency: 10 })
  @Publish()
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<[OrderPaid, OrderStatusChanged]> {
    const transaction = handlerTransaction(ctx);
    const paymentId = uuidv7();
    // One statement: marks a placed order paid, and reads the order as it is now either way (a CTE's UPDATE is not
    // visible to the rest of its statement, hence the UNION).
    const [order] = await transaction.query<PaidOrderRow[]>(PAY_ORDER, [event.orderId, paymentId]);
    if (!order) throw new OrderNotFoundError(event.orderId);
    if (order.payment_id === null || order.paid_at === null) {
      throw new Error(`order ${order.id} is '${order.status}' but has no payment recorded`);
    }
    const amountCents = Number(order.total_cents);
    // Every run that commits charges, as a call to a payment provider would: the order's conditional update is
    // idempotent, the charge is not. Only the inbox keeps it to one per order, and the ledger shows if it did not.
    await transaction.query(CHARGE, [paymentId, order.id, amountCents, ctx.envelope.messageId]);
    // An order already paid (a redelivery that got past deduplication) emits its OrderPaid and status change
    // again from the stored payment: downstream consumers drop the duplicates by their idempotency keys.
    return [
      OrderPaid.of({
        orderId: order.id,
        paymentId: order.payment_id,
        amountCents,
        paidAt: order.paid_at.toISOString(),
      }),
      OrderStatusChanged.of(order.id, 'paid', order.paid_at),
    ];
  }
}
