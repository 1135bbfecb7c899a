import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Consume } from 'nestjs-reliable-messaging';
import type { Repository } from 'typeorm';
import { QUEUES } from '../config/messaging-names';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';
import { Order } from '../orders/order.entity';
import { OrderNotPaidYetError } from './order-not-paid-yet.error';

/**
 * Ships paid orders. The pattern is "notification plus re-read": OrderPaid only says which order changed, and
 * the order's current row decides what to do, so a duplicate, a late or an out-of-order event can never ship
 * twice or ship an unpaid order. The conditional UPDATE makes the handler idempotent by construction, which is
 * why it needs no inbox.
 */
@Injectable()
export class ShippingConsumer {
  private readonly logger = new Logger('Shipping');

  constructor(@InjectRepository(Order) private readonly orders: Repository<Order>) {}

  @Consume({ queue: QUEUES.shipping, concurrency: 5, dedup: false })
  async onOrderPaid(event: OrderPaid): Promise<void> {
    const order = await this.orders.findOneBy({ id: event.orderId });
    if (!order) throw new OrderNotFoundError(event.orderId);
    switch (order.status) {
      case 'placed':
        throw new OrderNotPaidYetError(order.id);
      case 'shipped':
        this.logger.debug(`order ${order.id} is already shipped; nothing to do`);
        return;
      case 'paid':
        // A concurrent duplicate may ship it first; then this updates no row, which is just as right.
        await this.orders.update(
          { id: order.id, status: 'paid' },
          { status: 'shipped', shippedAt: () => 'now()' },
        );
    }
  }
}
