import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { SCHEDULED_TABLE } from '../database/table-names';
import type { OutboundProperties } from '../envelope/envelope';

/**
 * A message published with `deliverAt` or `delayMs`, stored exactly as it goes on the wire, waiting for its time.
 * When it is due the module moves it into the outbox (`rm_outbox`) in one statement, and the relay sends it from
 * there; cancelling deletes the row. Rows are created and deleted by the module; apps may read them through this
 * entity. The table comes from `CreateScheduled1767225600027`, never from `synchronize`.
 */
@Entity({ name: SCHEDULED_TABLE })
@Index('rm_scheduled_deliver_at_idx', ['deliverAt', 'id'])
@Index('rm_scheduled_message_id_idx', ['messageId'])
@Index('rm_scheduled_idempotency_key_idx', ['idempotencyKey'])
export class ScheduledMessageEntity {
  /** Insertion order; rows due at the same moment enter the outbox in this order. */
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'rm_scheduled_pkey',
  })
  id!: string;

  /** The message's `message_id` property, as `publish()` returned it. */
  @Column({ name: 'message_id', type: 'uuid' })
  messageId!: string;

  /** The message's idempotency key (its `rm-idempotency-key` header, else its message id). */
  @Column({ name: 'idempotency_key', type: 'text' })
  idempotencyKey!: string;

  @Column({ type: 'text' })
  exchange!: string;

  @Column({ name: 'routing_key', type: 'text' })
  routingKey!: string;

  /** The AMQP properties and headers (trace context included) as the envelope factory built them. */
  @Column({ type: 'jsonb' })
  properties!: OutboundProperties;

  @Column({ type: 'bytea' })
  body!: Buffer;

  /** The ordering key the outbox row gets when the message is due. */
  @Column({ name: 'ordering_key', type: 'text', nullable: true })
  orderingKey!: string | null;

  /** When the message is due: it enters the outbox then. */
  @Column({ name: 'deliver_at', type: 'timestamptz' })
  deliverAt!: Date;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;
}
