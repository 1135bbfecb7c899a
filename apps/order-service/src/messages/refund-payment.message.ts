import { MessageType } from 'nestjs-reliable-messaging';
import { IsUUID } from 'class-validator';

/** The order's saga asks the payment gateway to refund a payment (its compensation). Ordered per order. */
@MessageType<RefundPayment>({
  type: 'payment.refund-requested',
  version: '1.0',
  idempotencyKey: (message) => `refund-requested:${message.paymentId}`,
  orderingKey: (message) => message.orderId,
})
export class RefundPayment {
  @IsUUID()
  orderId!: string;

  @IsUUID()
  paymentId!: string;

  static of(orderId: string, paymentId: string): RefundPayment {
    return Object.assign(new RefundPayment(), { orderId, paymentId });
  }
}
