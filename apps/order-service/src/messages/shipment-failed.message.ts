import { MessageType } from 'nestjs-reliable-messaging';
import { IsIn, IsUUID } from 'class-validator';

/** Why shipping could not send an order. */
export const SHIPMENT_FAILURES = ['undeliverable'] as const;
export type ShipmentFailure = (typeof SHIPMENT_FAILURES)[number];

/** Shipping could not send a paid order: the order's saga refunds the payment. Ordered per order. */
@MessageType<ShipmentFailed>({
  type: 'order.shipment-failed',
  version: '1.0',
  idempotencyKey: (message) => `shipment-failed:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class ShipmentFailed {
  @IsUUID()
  orderId!: string;

  @IsIn(SHIPMENT_FAILURES)
  reason!: ShipmentFailure;

  static of(orderId: string, reason: ShipmentFailure): ShipmentFailed {
    return Object.assign(new ShipmentFailed(), { orderId, reason });
  }
}
