import { MessageType } from '@app/reliable-messaging';
import { IsInt, IsISO8601, IsNotEmpty, IsString, IsUUID, MaxLength, Min } from 'class-validator';

/** A customer placed an order. Consumers deduplicate on `order-placed:<orderId>`; ordered per order. */
@MessageType<OrderPlaced>({
  type: 'order.placed',
  version: '1.0',
  idempotencyKey: (message) => `order-placed:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class OrderPlaced {
  @IsUUID()
  orderId!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  customerId!: string;

  /** What the customer owes, in integer cents. */
  @IsInt()
  @Min(0)
  totalCents!: number;

  @IsInt()
  @Min(1)
  itemCount!: number;

  /** ISO 8601. */
  @IsISO8601({ strict: true })
  placedAt!: string;

  static of(fields: Pick<OrderPlaced, keyof OrderPlaced>): OrderPlaced {
    return Object.assign(new OrderPlaced(), fields);
  }
}
