import { MessageType } from 'nestjs-reliable-messaging';
import { IsIn, IsInt, IsISO8601, IsUUID, Min } from 'class-validator';

/** The statuses an order's status-changed events announce, in the order an order goes through them. */
export const ANNOUNCED_STATUSES = ['placed', 'paid'] as const;
export type AnnouncedStatus = (typeof ANNOUNCED_STATUSES)[number];

/**
 * An order moved to a new status. `sequence` numbers an order's changes from 1 in the order they happened (placed
 * is 1, paid is 2), so a consumer, or a check of one, can tell whether it saw them in that order. Published in the
 * same transaction as the change; ordered per order.
 */
@MessageType<OrderStatusChanged>({
  type: 'order.status-changed',
  version: '1.0',
  idempotencyKey: (message) => `order-status:${message.orderId}:${message.sequence}`,
  orderingKey: (message) => message.orderId,
})
export class OrderStatusChanged {
  @IsUUID()
  orderId!: string;

  @IsIn(ANNOUNCED_STATUSES)
  status!: AnnouncedStatus;

  @IsInt()
  @Min(1)
  sequence!: number;

  /** ISO 8601. */
  @IsISO8601({ strict: true })
  changedAt!: string;

  static of(orderId: string, status: AnnouncedStatus, changedAt: Date): OrderStatusChanged {
    return Object.assign(new OrderStatusChanged(), {
      orderId,
      status,
      sequence: ANNOUNCED_STATUSES.indexOf(status) + 1,
      changedAt: changedAt.toISOString(),
    });
  }
}
