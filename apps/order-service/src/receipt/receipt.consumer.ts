import { Injectable } from '@nestjs/common';
import { Consume, type MessageContext } from 'nestjs-reliable-messaging';
import { IsNull } from 'typeorm';
import { readReceiptRateLimit } from '../config/app-config';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';
import { Order } from '../orders/order.entity';
import { ReceiptClient } from './receipt-client';

/**
 * Sends the customer a receipt once an order is paid, through the external receipt service. The call carries
 * the idempotency key `receipt:<orderId>`: if the handler fails after the service answered (say the commit
 * fails), the redelivered message calls again and the service answers with the receipt it already sent.
 * A transient failure of the service (ReceiptServiceUnavailableError) is thrown on, to be retried.
 */
/**
 * The receipt service's quota, 0 for none; read here, once, since `@Consume()` options are fixed when this class
 * loads.
 */
const RECEIPTS_PER_SECOND = readReceiptRateLimit(process.env);

@Injectable()
export class ReceiptConsumer {
  constructor(private readonly receipts: ReceiptClient) {}

  @Consume({
    queue: QUEUES.receipt,
    concurrency: 10,
    prefetch: 10,
    rateLimit: RECEIPTS_PER_SECOND > 0 ? { limit: RECEIPTS_PER_SECOND, periodMs: 1000 } : undefined,
  })
  async onOrderPaid(event: OrderPaid, ctx: MessageContext): Promise<void> {
    const orders = handlerTransaction(ctx).getRepository(Order);
    const order = await orders.findOneBy({ id: event.orderId });
    if (!order) throw new OrderNotFoundError(event.orderId);
    if (order.receiptId !== null) return;
    const receipt = await this.receipts.send(
      { orderId: order.id, customerId: order.customerId, amountCents: event.amountCents },
      { idempotencyKey: `receipt:${order.id}`, signal: ctx.signal },
    );
    await orders.update(
      { id: order.id, receiptId: IsNull() },
      { receiptId: receipt.receiptId, receiptSentAt: receipt.sentAt },
    );
  }
}
