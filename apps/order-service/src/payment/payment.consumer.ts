import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Consume, Publish } from '@app/reliable-messaging';
import { v7 as uuidv7 } from 'uuid';
import { QUEUES } from '../config/messaging-names';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderPlaced } from '../messages/order-placed.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';
import { Order } from '../orders/order.entity';

/**
 * Takes payment for placed orders (a stand-in: every payment succeeds) and emits OrderPaid. The update (through
 * `txHost.tx`), the OrderPaid it returns and the inbox row that marks OrderPlaced as handled commit together in
 * the transaction the module opens for the handler, so a redelivered OrderPlaced is skipped, never charged twice.
 */
@Injectable()
export class PaymentConsumer {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @Consume({ queue: QUEUES.payment, concurrency: 10 })
  @Publish()
  async onOrderPlaced(event: OrderPlaced): Promise<OrderPaid> {
    const orders = this.txHost.tx.getRepository(Order);
    await orders.update(
      { id: event.orderId, status: 'placed' },
      { status: 'paid', paymentId: uuidv7(), paidAt: () => 'now()' },
    );
    const order = await orders.findOneBy({ id: event.orderId });
    if (!order) throw new OrderNotFoundError(event.orderId);
    if (order.paymentId === null || order.paidAt === null) {
      throw new Error(`order ${order.id} is '${order.status}' but has no payment recorded`);
    }
    // An order already paid (a redelivery that got past deduplication, or none configured) emits its OrderPaid
    // again from the stored payment: downstream consumers drop the duplicate by its idempotency key.
    return OrderPaid.of({
      orderId: order.id,
      paymentId: order.paymentId,
      amountCents: order.totalCents,
      paidAt: order.paidAt.toISOString(),
    });
  }
}
