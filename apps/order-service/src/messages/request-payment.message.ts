import { MessageType } from 'nestjs-reliable-messaging';
import { IsInt, IsNotEmpty, IsString, IsUUID, MaxLength, Min } from 'class-validator';

/**
 * The order's saga asks the payment gateway to charge the customer (a command, answered by PaymentCaptured, or
 * not at all: the saga's payment timeout covers a gateway that never answers). Ordered per order.
 */
@MessageType<RequestPayment>({
  type: 'payment.requested',
  version: '1.0',
  idempotencyKey: (message) => `payment-requested:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class RequestPayment {
  @IsUUID()
  orderId!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  customerId!: string;

  /** What to charge, in integer cents. */
  @IsInt()
  @Min(0)
  amountCents!: number;

  static of(fields: Pick<RequestPayment, keyof RequestPayment>): RequestPayment {
    return Object.assign(new RequestPayment(), fields);
  }
}
