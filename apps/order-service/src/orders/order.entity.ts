import { Column, Entity, OneToMany, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database/bigint-number.transformer';
import { OrderItem } from './order-item.entity';
import type { OrderStatus } from './order-status';

/** An order and where it stands. Amounts are integer cents. */
@Entity({ name: 'orders' })
export class Order {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ name: 'customer_id', type: 'varchar', length: 100 })
  customerId!: string;

  @Column({ type: 'varchar', length: 16 })
  status!: OrderStatus;

  @Column({ name: 'total_cents', type: 'bigint', transformer: bigintNumber })
  totalCents!: number;

  @OneToMany(() => OrderItem, (item) => item.order, { cascade: ['insert'] })
  items!: OrderItem[];

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'payment_id', type: 'uuid', nullable: true })
  paymentId!: string | null;

  @Column({ name: 'paid_at', type: 'timestamptz', nullable: true })
  paidAt!: Date | null;

  @Column({ name: 'shipped_at', type: 'timestamptz', nullable: true })
  shippedAt!: Date | null;

  @Column({ name: 'receipt_id', type: 'varchar', length: 100, nullable: true })
  receiptId!: string | null;

  @Column({ name: 'receipt_sent_at', type: 'timestamptz', nullable: true })
  receiptSentAt!: Date | null;

  @Column({ name: 'cancelled_at', type: 'timestamptz', nullable: true })
  cancelledAt!: Date | null;

  /** Why the order's saga cancelled it: `payment-timeout` or `shipment-failed`. */
  @Column({ name: 'cancel_reason', type: 'varchar', length: 32, nullable: true })
  cancelReason!: string | null;
}
