import type { Order } from './order.entity';
import type { OrderStatus } from './order-status';

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
}

/** Counts over every order, as `GET /orders/stats` answers them. */
export interface OrderStats {
  /** Orders stored. */
  orders: number;
  /** Orders by current status. */
  placed: number;
  paid: number;
  shipped: number;
  /** Orders whose receipt was sent. */
  receiptsSent: number;
}

export function toOrderView(order: Order): OrderView {
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
  };
}
