import { Injectable } from '@nestjs/common';
import { Consume, type MessageContext } from 'nestjs-reliable-messaging';
import type { EntityManager } from 'typeorm';
import { OrderPlaced } from './order-placed';
import { Shipment } from './shipment.entity';

/** The queue's name comes from the environment, so that each run of the package test has its own. */
export const SHIPPING_QUEUE = process.env.SHIPPING_QUEUE ?? 'shipping.order-placed';

/** Where shipments are written: in the handler's transaction (with the inbox row) when there is one. */
@Injectable()
export class ShipmentBook {
  async record(order: OrderPlaced, manager: EntityManager | undefined): Promise<void> {
    if (!manager) throw new Error('the shipment book needs the transaction of a dataSource');
    await manager.insert(Shipment, { orderId: order.orderId, totalCents: order.totalCents });
  }
}

@Injectable()
export class ShippingHandler {
  applied = 0;

  constructor(private readonly book: ShipmentBook) {}

  @Consume({ queue: SHIPPING_QUEUE })
  async onOrderPlaced(order: OrderPlaced, ctx: MessageContext): Promise<void> {
    await this.book.record(order, ctx.manager);
    this.applied++;
  }
}
