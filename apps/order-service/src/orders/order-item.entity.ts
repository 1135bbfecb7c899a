import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database/bigint-number.transformer';

/** One line of an order. The unit price is integer cents. */
@Entity({ name: 'order_items' })
export class OrderItem {
  @PrimaryColumn({ name: 'order_id', type: 'uuid' })
  orderId!: string;

  /** The line's position in the order, from 1. */
  @PrimaryColumn({ type: 'smallint' })
  line!: number;

  @Column({ type: 'varchar', length: 64 })
  sku!: string;

  @Column({ type: 'integer' })
  quantity!: number;

  @Column({ name: 'unit_price_cents', type: 'bigint', transformer: bigintNumber })
  unitPriceCents!: number;

  /**
   * The order this line belongs to, named by entity and property so that the two entities do not import each
   * other; nothing reads it (the line's `orderId` is its key), TypeORM needs it as the inverse of `Order.items`.
   */
  @ManyToOne('Order', 'items', { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'order_id' })
  order!: object;
}
