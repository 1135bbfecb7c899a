import { MessageType } from 'nestjs-reliable-messaging';
import { IsInt, IsISO8601, IsUUID, Min } from 'class-validator';

/** The payment gateway charged an order's customer. Ordered per order. */
@MessageType<PaymentCaptured>({
  type: 'payment.captured',
  version: '1.0',
  idempotencyKey: (message) => `payment-captured:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class PaymentCaptured {
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
  capturedAt!: string;

  static of(fields: Pick<PaymentCaptured, keyof PaymentCaptured>): PaymentCaptured {
    return Object.assign(new PaymentCaptured(), fields);
  }
}
