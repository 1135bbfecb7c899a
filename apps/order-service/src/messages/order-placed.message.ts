import { MessageType } from 'nestjs-reliable-messaging';
import { IsInt, IsISO8601, IsNotEmpty, IsOptional, IsString, IsUUID, MaxLength, Min } from 'class-validator';

/** A note longer than this many bytes (as JSON) goes through the claim check instead of the broker. */
export const NOTE_CLAIM_CHECK_BYTES = 16 * 1024;

/**
 * A customer placed an order. Consumers deduplicate on `order-placed:<orderId>`; ordered per order. A large
 * `note` is kept in the claim-check store (the order database's `rm_claim_check`) and put back for consumers.
 */
@MessageType<OrderPlaced>({
  type: 'order.placed',
  version: '1.1',
  idempotencyKey: (message) => `order-placed:${message.orderId}`,
  orderingKey: (message) => message.orderId,
  claimCheck: { thresholdBytes: NOTE_CLAIM_CHECK_BYTES, field: 'note' },
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

  /** The customer's note, if any (since 1.1). */
  @IsOptional()
  @IsString()
  note?: string;

  static of(fields: Pick<OrderPlaced, Exclude<keyof OrderPlaced, 'note'>> & { note?: string }): OrderPlaced {
    return Object.assign(new OrderPlaced(), fields);
  }
}
