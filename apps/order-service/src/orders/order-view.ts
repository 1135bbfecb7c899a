import type { SagaInstanceView } from 'nestjs-reliable-messaging';
import type { OrderSagaStage } from '../fulfilment/order-saga';
import type { Order } from './order.entity';
import type { OrderStatus } from './order-status';

/** Where the order's saga stands, as `GET /orders/:id` shows it. */
export interface OrderSagaView {
  /** `active` until the flow ends (shipped, or cancelled), then `completed`. */
  status: 'active' | 'completed';
  stage: OrderSagaStage;
  /** The steps the instance has taken. */
  version: number;
  /** The timeouts it waits for (the payment's, until the order is paid or cancelled), due times in ISO 8601. */
  pendingTimeouts: Array<{ dueAt: string }>;
  /** The messages it handled, oldest first. */
  history: Array<{ messageType: string; outcome: string; handledAt: string }>;
}

/** An order as `GET /orders/:id` answers it. Amounts are integer cents. */
export interface OrderView {
  id: string;
  customerId: string;
  status: OrderStatus;
  totalCents: number;
  items: Array<{ sku: string; quantity: number; unitPriceCents: number }>;
  receiptSent: boolean;
  createdAt: string;
  paidAt: string | null;
  shippedAt: string | null;
  cancelledAt: string | null;
  /** Why the order was cancelled: `payment-timeout` or `shipment-failed`; null unless cancelled. */
  cancelReason: string | null;
  /** The order's saga; null until its first step ran (a moment after the order is placed). */
  saga: OrderSagaView | null;
}

/** Counts over every order, as `GET /orders/stats` answers them. */
export interface OrderStats {
  /** Orders stored. */
  orders: number;
  /** Orders by current status. */
  placed: number;
  paid: number;
  shipped: number;
  cancelled: number;
  /** Orders whose receipt was sent. */
  receiptsSent: number;
}

export function toOrderView(order: Order, saga?: SagaInstanceView): OrderView {
  return {
    id: order.id,
    customerId: order.customerId,
    status: order.status,
    totalCents: order.totalCents,
    items: (order.items ?? []).map(({ sku, quantity, unitPriceCents }) => ({
      sku,
      quantity,
      unitPriceCents,
    })),
    receiptSent: order.receiptId !== null,
    createdAt: order.createdAt.toISOString(),
    paidAt: order.paidAt?.toISOString() ?? null,
    shippedAt: order.shippedAt?.toISOString() ?? null,
    cancelledAt: order.cancelledAt?.toISOString() ?? null,
    cancelReason: order.cancelReason,
    saga: saga ? toSagaView(saga) : null,
  };
}

function toSagaView(saga: SagaInstanceView): OrderSagaView {
  return {
    status: saga.status,
    stage: (saga.state as { stage?: OrderSagaStage }).stage ?? 'awaiting-payment',
    version: saga.version,
    pendingTimeouts: saga.pendingTimeouts.map(({ dueAt }) => ({ dueAt })),
    history: saga.history.map(({ messageType, outcome, handledAt }) => ({
      messageType,
      outcome,
      handledAt: new Date(handledAt).toISOString(),
    })),
  };
}
