import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database/bigint-number.transformer';

/**
 * One charge the payment consumer made, written in its handler's transaction. An order charged twice has two
 * rows: nothing in the schema prevents it, so the ledger shows a double charge instead of hiding it.
 */
@Entity({ name: 'payments' })
export class Payment {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ name: 'order_id', type: 'uuid' })
  orderId!: string;

  @Column({ name: 'amount_cents', type: 'bigint', transformer: bigintNumber })
  amountCents!: number;

  /** The OrderPlaced message the charge was made for. */
  @Column({ name: 'message_id', type: 'varchar', length: 200, nullable: true })
  messageId!: string | null;

  @Column({ name: 'charged_at', type: 'timestamptz', default: () => 'now()' })
  chargedAt!: Date;
}
