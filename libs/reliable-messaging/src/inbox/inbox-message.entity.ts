import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { INBOX_TABLE } from '../database/table-names';

/**
 * A message a consumer has handled, keyed by the consumer (its queue) and the message's idempotency key. The row
 * commits in the handler's own transaction, so a redelivery finds it and skips the handler. The table comes from
 * `CreateInbox1767225600001`, never from `synchronize`.
 */
@Entity({ name: INBOX_TABLE })
@Index('rm_inbox_processed_at_idx', ['processedAt'])
export class InboxMessageEntity {
  /** The consumer's queue: stable across renames of the handler class. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'rm_inbox_pkey' })
  consumer!: string;

  @PrimaryColumn({ name: 'idempotency_key', type: 'text', primaryKeyConstraintName: 'rm_inbox_pkey' })
  idempotencyKey!: string;

  /** The message id of the delivery that was handled. */
  @Column({ name: 'message_id', type: 'text' })
  messageId!: string;

  @Column({ name: 'message_type', type: 'text' })
  messageType!: string;

  @Column({ name: 'processed_at', type: 'timestamptz', default: () => 'now()' })
  processedAt!: Date;
}
