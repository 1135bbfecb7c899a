import { MessageType } from 'nestjs-reliable-messaging';
import { IsInt, IsISO8601, IsUUID, Min } from 'class-validator';

/** The payment gateway refunded a payment. Ordered per order. */
@MessageType<PaymentRefunded>({
  type: 'payment.refunded',
  version: '1.0',
  idempotencyKey: (message) => `payment-refunded:${message.paymentId}`,
  orderingKey: (message) => message.orderId,
})
export class PaymentRefunded {
  @IsUUID()
  orderId!: string;

  @IsUUID()
  paymentId!: string;

  /** What was refunded, in integer cents. */
  @IsInt()
  @Min(0)
  amountCents!: number;

  /** ISO 8601. */
  @IsISO8601({ strict: true })
  refundedAt!: string;

  static of(fields: Pick<PaymentRefunded, keyof PaymentRefunded>): PaymentRefunded {
    return Object.assign(new PaymentRefunded(), fields);
  }
}
