import { Injectable } from '@nestjs/common';
import { Consume, Publish, type MessageContext } from 'nestjs-reliable-messaging';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderShipped } from '../messages/order-shipped.message';
import { ShipmentFailed } from '../messages/shipment-failed.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';
import { OrderNotPaidYetError } from './order-not-paid-yet.error';

/**
 * The customer whose orders the stand-in carrier cannot deliver: shipping answers ShipmentFailed after the
 * payment, and the order saga refunds it (its compensation) and cancels the order.
 */
export const UNDELIVERABLE_CUSTOMER_ID = 'customer-undeliverable';

/** Ships the order if it is paid, and only then, reading it as it is after the update either way. */
const SHIP_ORDER =
  `WITH shipped AS (UPDATE orders SET status = 'shipped', shipped_at = now() ` +
  `WHERE id = $1 AND status = 'paid' AND customer_id <> $2 RETURNING id, status, customer_id, total_cents, shipped_at) ` +
  'SELECT id, status, customer_id, total_cents, shipped_at FROM shipped UNION ALL ' +
  'SELECT id, status, customer_id, total_cents, shipped_at FROM orders WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM shipped)';

interface ShippedOrderRow {
  id: string;
  status: string;
  customer_id: string;
  total_cents: string;
  shipped_at: Date | null;
}

/**
 * Ships paid orders and tells the order saga how it went: OrderShipped, or ShipmentFailed for an order the
 * carrier cannot deliver. The order's update, the answer and the inbox row commit in one transaction; the
 * conditional update makes a redelivery that got past the inbox ship nothing twice (it answers OrderShipped
 * again, which the saga drops by its idempotency key).
 */
@Injectable()
export class ShippingConsumer {
  @Consume({ queue: QUEUES.shipping, concurrency: 5 })
  @Publish()
  async onOrderPaid(
    event: OrderPaid,
    ctx: MessageContext,
  ): Promise<OrderShipped | ShipmentFailed | undefined> {
    const transaction = handlerTransaction(ctx);
    const [order] = await transaction.query<ShippedOrderRow[]>(SHIP_ORDER, [
      event.orderId,
      UNDELIVERABLE_CUSTOMER_ID,
    ]);
    if (!order) throw new OrderNotFoundError(event.orderId);
    if (order.status === 'shipped' && order.shipped_at !== null) {
      return OrderShipped.of({
        orderId: order.id,
        amountCents: Number(order.total_cents),
        shippedAt: order.shipped_at.toISOString(),
      });
    }
    if (order.status === 'paid' && order.customer_id === UNDELIVERABLE_CUSTOMER_ID) {
      return ShipmentFailed.of(order.id, 'undeliverable');
    }
    // A cancelled order is never shipped; not paid yet (a race no OrderPaid from the outbox can meet) is retried.
    if (order.status === 'cancelled') return undefined;
    throw new OrderNotPaidYetError(event.orderId);
  }
}
