import { Injectable } from '@nestjs/common';
import { Consume, type MessageContext } from 'nestjs-reliable-messaging';
import { readReceiptRateLimit } from '../config/app-config';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderShipped } from '../messages/order-shipped.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';
import { ReceiptClient } from './receipt-client';

/**
 * Sends the customer a receipt once an order is shipped, through the external receipt service. The call carries
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
  async onOrderShipped(event: OrderShipped, ctx: MessageContext): Promise<void> {
    const transaction = handlerTransaction(ctx);
    const [order] = await transaction.query<Array<{ customer_id: string; receipt_id: string | null }>>(
      'SELECT customer_id, receipt_id FROM orders WHERE id = $1',
      [event.orderId],
    );
    if (!order) throw new OrderNotFoundError(event.orderId);
    if (order.receipt_id !== null) return;
    const receipt = await this.receipts.send(
      { orderId: event.orderId, customerId: order.customer_id, amountCents: event.amountCents },
      { idempotencyKey: `receipt:${event.orderId}`, signal: ctx.signal },
    );
    await transaction.query(
      'UPDATE orders SET receipt_id = $2, receipt_sent_at = $3 WHERE id = $1 AND receipt_id IS NULL',
      [event.orderId, receipt.receiptId, receipt.sentAt],
    );
  }
}
