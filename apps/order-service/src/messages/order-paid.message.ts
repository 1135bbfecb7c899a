import { MessageType } from 'nestjs-reliable-messaging';
import { IsInt, IsISO8601, IsUUID, Min } from 'class-validator';

/** An order was paid. Consumers deduplicate on `order-paid:<orderId>`; ordered per order. */
@MessageType<OrderPaid>({
  type: 'order.paid',
  version: '1.0',
  idempotencyKey: (message) => `order-paid:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class OrderPaid {
  @IsUUID()
  orderId!: string;

  @IsUUID()
  paymentId!: string;

  /** What was charged, in integer cents. */
  @IsInt()
  @Min(0)
  amountCents!: number;

  /** ISO 8601. */
  @IsISO8601({ strict: true })
  paidAt!: string;

  static of(fields: Pick<OrderPaid, keyof OrderPaid>): OrderPaid {
    return Object.assign(new OrderPaid(), fields);
  }
}
