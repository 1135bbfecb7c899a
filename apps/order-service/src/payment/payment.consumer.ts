import { Injectable } from '@nestjs/common';
import { Consume, Publish, type MessageContext } from 'nestjs-reliable-messaging';
import { v7 as uuidv7 } from 'uuid';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderStatusChanged } from '../messages/order-status-changed.message';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderPlaced } from '../messages/order-placed.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';
import { Order } from '../orders/order.entity';
import { Payment } from './payment.entity';

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
    const orders = transaction.getRepository(Order);
    const paymentId = uuidv7();
    await orders.update(
      { id: event.orderId, status: 'placed' },
      { status: 'paid', paymentId, paidAt: () => 'now()' },
    );
    const order = await orders.findOneBy({ id: event.orderId });
    if (!order) throw new OrderNotFoundError(event.orderId);
    if (order.paymentId === null || order.paidAt === null) {
      throw new Error(`order ${order.id} is '${order.status}' but has no payment recorded`);
    }
    // Every run that commits charges, as a call to a payment provider would: the order's conditional update is
    // idempotent, the charge is not. Only the inbox keeps it to one per order, and the ledger shows if it did not.
    await transaction.getRepository(Payment).insert({
      id: paymentId,
      orderId: order.id,
      amountCents: order.totalCents,
      messageId: ctx.envelope.messageId,
    });
    // An order already paid (a redelivery that got past deduplication) emits its OrderPaid and status change
    // again from the stored payment: downstream consumers drop the duplicates by their idempotency keys.
    return [
      OrderPaid.of({
        orderId: order.id,
        paymentId: order.paymentId,
        amountCents: order.totalCents,
        paidAt: order.paidAt.toISOString(),
      }),
      OrderStatusChanged.of(order.id, 'paid', order.paidAt),
    ];
  }
}
