import { MessageType } from 'nestjs-reliable-messaging';
import { IsIn, IsISO8601, IsUUID } from 'class-validator';

/** Why an order was cancelled: its payment never came, or it could not be shipped and was refunded. */
export const CANCEL_REASONS = ['payment-timeout', 'shipment-failed'] as const;
export type CancelReason = (typeof CANCEL_REASONS)[number];

/**
 * An order was cancelled by its saga. The payment gateway voids the order's payment request on it (and refunds a
 * charge it made after all), so a payment that comes after the timeout is never kept. Ordered per order.
 */
@MessageType<OrderCancelled>({
  type: 'order.cancelled',
  version: '1.0',
  idempotencyKey: (message) => `order-cancelled:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class OrderCancelled {
  @IsUUID()
  orderId!: string;

  @IsIn(CANCEL_REASONS)
  reason!: CancelReason;

  /** ISO 8601. */
  @IsISO8601({ strict: true })
  cancelledAt!: string;

  static of(orderId: string, reason: CancelReason, cancelledAt: Date): OrderCancelled {
    return Object.assign(new OrderCancelled(), { orderId, reason, cancelledAt: cancelledAt.toISOString() });
  }
}
