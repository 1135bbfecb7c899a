import { Inject } from '@nestjs/common';
import { MessagePublisher, Saga, SagaStep, type SagaContext } from 'nestjs-reliable-messaging';
import { APP_CONFIG, type AppConfig } from '../config/app-config';
import { QUEUES } from '../config/messaging-names';
import { handlerTransaction } from '../database/handler-transaction';
import { OrderCancelled, type CancelReason } from '../messages/order-cancelled.message';
import { OrderPaid } from '../messages/order-paid.message';
import { OrderPlaced } from '../messages/order-placed.message';
import { OrderShipped } from '../messages/order-shipped.message';
import { OrderStatusChanged } from '../messages/order-status-changed.message';
import { PaymentCaptured } from '../messages/payment-captured.message';
import { PaymentRefunded } from '../messages/payment-refunded.message';
import { PaymentTimedOut } from '../messages/payment-timed-out.message';
import { RefundPayment } from '../messages/refund-payment.message';
import { RequestPayment } from '../messages/request-payment.message';
import { ShipmentFailed } from '../messages/shipment-failed.message';
import { OrderNotFoundError } from '../orders/order-not-found.error';

/** The saga's name: its instances are stored under it (one per order, keyed by the order id). */
export const ORDER_SAGA = 'order-fulfilment';

/** Where an order's saga stands. */
export type OrderSagaStage = 'awaiting-payment' | 'shipping' | 'refunding' | 'shipped' | 'cancelled';

/** What the saga remembers of an order between its messages. */
export interface OrderSagaState {
  stage: OrderSagaStage;
  customerId: string;
  amountCents: number;
  /** The payment timeout's message id, while the saga waits for it: what the payment cancels. */
  paymentTimeoutId?: string;
  /** The captured payment, once there is one: what a refund refunds. */
  paymentId?: string;
  cancelReason?: CancelReason;
}

const ORDER_EXISTS = 'SELECT 1 FROM orders WHERE id = $1';

// Each UPDATE is wrapped in a SELECT: TypeORM answers a bare UPDATE with [rows, count], a SELECT with its rows.
const MARK_PAID =
  `WITH paid AS (UPDATE orders SET status = 'paid', payment_id = $2, paid_at = now() ` +
  `WHERE id = $1 AND status = 'placed' RETURNING paid_at) SELECT paid_at FROM paid`;

const CANCEL =
  `WITH cancelled AS (UPDATE orders SET status = 'cancelled', cancelled_at = now(), cancel_reason = $2 ` +
  `WHERE id = $1 AND status IN ('placed', 'paid') RETURNING cancelled_at) SELECT cancelled_at FROM cancelled`;

/** Every step's order id is its instance's key. */
const byOrder = (message: { orderId: string }): string => message.orderId;

/**
 * An order's way from placed to its receipt, as one saga instance per order:
 *
 * placed → payment requested (and a timeout of `PAYMENT_TIMEOUT_MS` asked for) → paid (OrderPaid: shipping
 * ships it) → shipped (the receipt service sends the receipt on OrderShipped) → completed.
 *
 * Two ways out: the payment does not come in time (the timeout cancels the order and publishes OrderCancelled,
 * on which the gateway voids the request), or shipping fails after the payment (the compensation: the payment is
 * refunded, then the order cancelled). Each step's change of the order row, the messages it publishes, its
 * timeouts, the instance's new state and the message's inbox row commit in one transaction. A step that finds
 * its instance past the stage it handles does nothing: a late or repeated message never moves an order back.
 */
@Saga({
  name: ORDER_SAGA,
  initialState: (): OrderSagaState => ({ stage: 'awaiting-payment', customerId: '', amountCents: 0 }),
})
export class OrderSaga {
  constructor(
    private readonly publisher: MessagePublisher,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @SagaStep(OrderPlaced, {
    correlate: byOrder,
    onMissing: 'start',
    queue: QUEUES.sagaPlaced,
    concurrency: 10,
  })
  async onPlaced(event: OrderPlaced, saga: SagaContext<OrderSagaState>): Promise<void> {
    if (!saga.isNew) return;
    // An OrderPlaced may come before its order's commit is visible, or name no order at all (a poison message):
    // retried, and dead-lettered once its attempts are spent.
    const orders = await handlerTransaction(saga).query<unknown[]>(ORDER_EXISTS, [event.orderId]);
    if (orders.length === 0) throw new OrderNotFoundError(event.orderId);
    saga.state = { stage: 'awaiting-payment', customerId: event.customerId, amountCents: event.totalCents };
    await this.publisher.publish(
      RequestPayment.of({
        orderId: event.orderId,
        customerId: event.customerId,
        amountCents: event.totalCents,
      }),
    );
    saga.state.paymentTimeoutId = await saga.requestTimeout(PaymentTimedOut.of(event.orderId), {
      delayMs: this.config.paymentTimeoutMs,
    });
  }

  @SagaStep(PaymentCaptured, { correlate: byOrder, queue: QUEUES.sagaPaymentCaptured, concurrency: 5 })
  async onPaymentCaptured(event: PaymentCaptured, saga: SagaContext<OrderSagaState>): Promise<void> {
    if (saga.state.stage !== 'awaiting-payment') return;
    const [order] = await handlerTransaction(saga).query<Array<{ paid_at: Date }>>(MARK_PAID, [
      event.orderId,
      event.paymentId,
    ]);
    if (!order) throw new OrderNotFoundError(event.orderId);
    saga.state.stage = 'shipping';
    saga.state.paymentId = event.paymentId;
    // Paid in time: the timeout is cancelled with this step's commit (one already due still arrives, to no effect).
    // An instance started before the id was kept waits for no other timeout: all of its pending ones go.
    const { paymentTimeoutId } = saga.state;
    const timeouts = paymentTimeoutId ? [paymentTimeoutId] : saga.pendingTimeouts.map((t) => t.messageId);
    for (const messageId of timeouts) saga.cancelTimeout(messageId);
    delete saga.state.paymentTimeoutId;
    await this.publisher.publishAll([
      OrderPaid.of({
        orderId: event.orderId,
        paymentId: event.paymentId,
        amountCents: event.amountCents,
        paidAt: order.paid_at.toISOString(),
      }),
      OrderStatusChanged.of(event.orderId, 'paid', order.paid_at),
    ]);
  }

  @SagaStep(PaymentTimedOut, { correlate: byOrder, queue: QUEUES.sagaPaymentTimedOut, concurrency: 2 })
  async onPaymentTimedOut(event: PaymentTimedOut, saga: SagaContext<OrderSagaState>): Promise<void> {
    // A timeout that was already due when the payment came arrives anyway, and means nothing once paid.
    if (saga.state.stage !== 'awaiting-payment') return;
    await this.cancel(event.orderId, 'payment-timeout', saga);
  }

  @SagaStep(OrderShipped, { correlate: byOrder, queue: QUEUES.sagaShipped, concurrency: 5 })
  onShipped(_event: OrderShipped, saga: SagaContext<OrderSagaState>): void {
    if (saga.state.stage !== 'shipping') return;
    saga.state.stage = 'shipped';
    saga.complete();
  }

  /** The compensation, first half: the order cannot be shipped, so its payment is refunded. */
  @SagaStep(ShipmentFailed, { correlate: byOrder, queue: QUEUES.sagaShipmentFailed, concurrency: 2 })
  async onShipmentFailed(event: ShipmentFailed, saga: SagaContext<OrderSagaState>): Promise<void> {
    if (saga.state.stage !== 'shipping' || saga.state.paymentId === undefined) return;
    saga.state.stage = 'refunding';
    await this.publisher.publish(RefundPayment.of(event.orderId, saga.state.paymentId));
  }

  /** The compensation, second half: refunded, the order is cancelled. */
  @SagaStep(PaymentRefunded, { correlate: byOrder, queue: QUEUES.sagaPaymentRefunded, concurrency: 2 })
  async onPaymentRefunded(event: PaymentRefunded, saga: SagaContext<OrderSagaState>): Promise<void> {
    if (saga.state.stage !== 'refunding') return;
    await this.cancel(event.orderId, 'shipment-failed', saga);
  }

  /** Cancels the order, announces it and completes the instance, which cancels the timeouts it still waits for. */
  private async cancel(
    orderId: string,
    reason: CancelReason,
    saga: SagaContext<OrderSagaState>,
  ): Promise<void> {
    const [order] = await handlerTransaction(saga).query<Array<{ cancelled_at: Date }>>(CANCEL, [
      orderId,
      reason,
    ]);
    if (!order) throw new OrderNotFoundError(orderId);
    saga.state.stage = 'cancelled';
    saga.state.cancelReason = reason;
    await this.publisher.publish(OrderCancelled.of(orderId, reason, order.cancelled_at));
    saga.complete();
  }
}
