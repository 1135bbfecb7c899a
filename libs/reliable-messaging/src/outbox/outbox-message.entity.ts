import { Check, Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { OUTBOX_TABLE } from '../database/table-names';
import type { OutboundProperties } from '../envelope/envelope';

/** Where a row of the outbox stands: waiting to be relayed, confirmed by the broker, or set aside for good. */
export type OutboxStatus = 'pending' | 'published' | 'parked';

/**
 * One message of the transactional outbox, stored exactly as it goes on the wire, written in the transaction of
 * the state change that caused it and relayed to the broker after that transaction commits. Rows are created
 * and changed by the module; apps read them (for example to inspect parked rows) through this entity. The
 * table comes from `CreateOutbox1767225600000`, never from `synchronize`.
 */
@Entity({ name: OUTBOX_TABLE })
@Check('rm_outbox_status_check', `"status" IN ('pending', 'published', 'parked')`)
@Index('rm_outbox_pending_idx', ['id'], { where: `"status" = 'pending'` })
@Index('rm_outbox_pending_key_idx', ['orderingKey', 'id'], {
  where: `"status" = 'pending' AND "ordering_key" IS NOT NULL`,
})
@Index('rm_outbox_retrying_idx', ['orderingKey', 'id'], {
  where: `"status" = 'pending' AND "attempts" > 0 AND "ordering_key" IS NOT NULL`,
})
@Index('rm_outbox_parked_idx', ['id'], { where: `"status" = 'parked'` })
@Index('rm_outbox_published_at_idx', ['publishedAt'], { where: `"status" = 'published'` })
export class OutboxMessageEntity {
  /** Commit-independent insertion order; the relay publishes each ordering key's rows in this order. */
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'rm_outbox_pkey',
  })
  id!: string;

  /** The message's `message_id` property. */
  @Column({ name: 'message_id', type: 'uuid' })
  messageId!: string;

  @Column({ type: 'text' })
  exchange!: string;

  @Column({ name: 'routing_key', type: 'text' })
  routingKey!: string;

  /** The AMQP properties and headers (trace context included) as the envelope factory built them. */
  @Column({ type: 'jsonb' })
  properties!: OutboundProperties;

  @Column({ type: 'bytea' })
  body!: Buffer;

  /** Rows with the same ordering key are published one relay at a time, in `id` order. */
  @Column({ name: 'ordering_key', type: 'text', nullable: true })
  orderingKey!: string | null;

  @Column({ type: 'text', default: 'pending' })
  status!: OutboxStatus;

  /** Failed publish attempts so far. */
  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  /** Why the last attempt failed, or why the row was parked. */
  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  /** Not relayed before this moment: the retry backoff, or a send scheduled for later. */
  @Column({ name: 'available_at', type: 'timestamptz', default: () => 'now()' })
  availableAt!: Date;

  /** When the broker confirmed it. */
  @Column({ name: 'published_at', type: 'timestamptz', nullable: true })
  publishedAt!: Date | null;

  /** When it was set aside as unpublishable (unroutable, oversized, no such exchange). */
  @Column({ name: 'parked_at', type: 'timestamptz', nullable: true })
  parkedAt!: Date | null;
}
