import { MessageType } from 'nestjs-reliable-messaging';
import { IsInt, IsISO8601, IsUUID, Min } from 'class-validator';

/** Shipping sent a paid order on its way. Ordered per order. */
@MessageType<OrderShipped>({
  type: 'order.shipped',
  version: '1.0',
  idempotencyKey: (message) => `order-shipped:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class OrderShipped {
  @IsUUID()
  orderId!: string;

  /** What the customer paid, in integer cents: the receipt's amount. */
  @IsInt()
  @Min(0)
  amountCents!: number;

  /** ISO 8601. */
  @IsISO8601({ strict: true })
  shippedAt!: string;

  static of(fields: Pick<OrderShipped, keyof OrderShipped>): OrderShipped {
    return Object.assign(new OrderShipped(), fields);
  }
}
