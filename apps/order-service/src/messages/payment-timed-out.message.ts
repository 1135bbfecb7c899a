import { MessageType } from 'nestjs-reliable-messaging';
import { IsUUID } from 'class-validator';

/** The order's saga waited `PAYMENT_TIMEOUT_MS` for its payment: a timeout the saga schedules for itself. */
@MessageType<PaymentTimedOut>({
  type: 'order.payment-timed-out',
  version: '1.0',
  idempotencyKey: (message) => `payment-timed-out:${message.orderId}`,
  orderingKey: (message) => message.orderId,
})
export class PaymentTimedOut {
  @IsUUID()
  orderId!: string;

  static of(orderId: string): PaymentTimedOut {
    return Object.assign(new PaymentTimedOut(), { orderId });
  }
}
