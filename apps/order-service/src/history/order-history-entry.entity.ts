import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Who recorded an entry: the per-order history (ordered by key) or the activity feed (one queue, in order). */
export type HistoryRecorder = 'history' | 'activity';

/**
 * One status change as an ordered consumer handled it. `position` is taken in the handler's transaction, so an
 * order's entries by position are the order its changes were handled in; the fault matrix counts an order whose
 * sequences do not go up by position as an order violation.
 */
@Entity('order_history')
export class OrderHistoryEntry {
  /** A bigint, which the driver returns as a string. */
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  position!: string;

  @Column('text')
  recorder!: HistoryRecorder;

  @Column('uuid', { name: 'order_id' })
  orderId!: string;

  @Column('text')
  status!: string;

  @Column('integer')
  sequence!: number;

  @Column('timestamptz', { name: 'handled_at', default: () => 'now()' })
  handledAt!: Date;
}
