import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { DEAD_LETTER_AUDIT_TABLE } from './dead-letter-audit-table';

export { DEAD_LETTER_AUDIT_TABLE };

/**
 * What an operator's tool did: to dead letters (replay, edit, purge), to parked outbox rows (retry, discard) or
 * to scheduled messages (`scheduled-cancel`);
 * a read of a message body (`read`); or what the admin API refused: a bearer token (`token-refused`) or a
 * console sign-in (`sign-in-failed`).
 */
export type DeadLetterAuditAction =
  | 'replay'
  | 'edit-replay'
  | 'purge'
  | 'outbox-retry'
  | 'outbox-discard'
  | 'scheduled-cancel'
  | 'read'
  | 'token-refused'
  | 'sign-in-failed';

/** How the operation ended: `started` stays only when the process died mid-operation. */
export type DeadLetterAuditOutcome = 'started' | 'completed' | 'failed';

/**
 * One replay, edit or purge of dead letters, or one retry or discard of parked outbox rows: who did it, what they selected, which messages it touched and how
 * it ended. Written before the operation changes anything and completed after, so an operation cut short still
 * leaves its record. The table comes from `CreateDeadLetterAudit1767225600003`,
 * `AllowOutboxAuditActions1767225600006`, `AllowAccessAuditActions1767225600026` and
 * `AllowScheduledCancelAudit1767225600041`, never from `synchronize`.
 */
@Entity({ name: DEAD_LETTER_AUDIT_TABLE })
@Check(
  'rm_dead_letter_audit_action_check',
  `"action" IN ('replay', 'edit-replay', 'purge', 'outbox-retry', 'outbox-discard', 'scheduled-cancel', 'read', 'token-refused', 'sign-in-failed')`,
)
@Check('rm_dead_letter_audit_outcome_check', `"outcome" IN ('started', 'completed', 'failed')`)
@Index('rm_dead_letter_audit_started_at_idx', ['startedAt'])
export class DeadLetterAuditEntity {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'rm_dead_letter_audit_pkey' })
  id!: string;

  @Column({ type: 'text' })
  action!: DeadLetterAuditAction;

  /** The OS user of the command line, or the admin API's token name or guard-resolved user. */
  @Column({ type: 'text' })
  actor!: string;

  /** The consumer queue when the operation named one. */
  @Column({ type: 'text', nullable: true })
  queue!: string | null;

  /** The filter as given (queue, ids, error class, type, time window, text). */
  @Column({ type: 'jsonb' })
  selection!: Record<string, unknown>;

  /** The message ids replayed, purged, retried or discarded. */
  @Column({ name: 'message_ids', type: 'jsonb', default: [] })
  messageIds!: string[];

  @Column({ name: 'message_count', type: 'integer', default: 0 })
  messageCount!: number;

  @Column({ type: 'text' })
  outcome!: DeadLetterAuditOutcome;

  /** A note given with the operation, body digests of an edit, failures. */
  @Column({ type: 'jsonb', default: {} })
  details!: Record<string, unknown>;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt!: Date;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;
}
