import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Consume } from 'nestjs-reliable-messaging';
import type { Repository } from 'typeorm';
import { QUEUES } from '../config/messaging-names';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';
import { Order } from '../orders/order.entity';
import { OrderNotPaidYetError } from './order-not-paid-yet.error';

/** Ships the order if it is paid, and only then: the one write of the handler, idempotent by its condition. */
const SHIP_ORDER = `UPDATE orders SET status = 'shipped', shipped_at = now() WHERE id = $1 AND status = 'paid'`;

/**
 * Ships paid orders. The pattern is "notification plus re-read": OrderPaid only says which order changed, and
 * the order's current row decides what to do, so a duplicate, a late or an out-of-order event can never ship
 * twice or ship an unpaid order. The conditional UPDATE makes the handler idempotent by construction, which is
 * why it needs no inbox; the row is read only when the UPDATE shipped nothing, to tell done from too early.
 */
@Injectable()
export class ShippingConsumer {
  private readonly logger = new Logger('Shipping');

  constructor(@InjectRepository(Order) private readonly orders: Repository<Order>) {}

  @Consume({ queue: QUEUES.shipping, concurrency: 5, dedup: false })
  async onOrderPaid(event: OrderPaid): Promise<void> {
    // A concurrent duplicate may ship it first; then this updates no row, which is just as right.
    const [, shipped] = await this.orders.query<[unknown[], number]>(SHIP_ORDER, [event.orderId]);
    if (shipped === 1) return;
    const [order] = await this.orders.query<Array<{ status: string }>>(
      'SELECT status FROM orders WHERE id = $1',
      [event.orderId],
    );
    if (!order) throw new OrderNotFoundError(event.orderId);
    // Paid only since the update looked (a race no OrderPaid from the outbox can meet) is retried, as placed is.
    if (order.status !== 'shipped') throw new OrderNotPaidYetError(event.orderId);
    this.logger.debug(`order ${event.orderId} is already shipped; nothing to do`);
  }
}
