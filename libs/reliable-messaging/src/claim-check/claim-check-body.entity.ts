import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { CLAIM_CHECK_TABLE } from '../database/table-names';

/**
 * A message body kept out of the broker by the claim check, in the PostgreSQL store. Written in the outbox row's
 * transaction, so a rollback leaves neither. The table comes from `CreateClaimCheck1767225600005`.
 */
@Entity({ name: CLAIM_CHECK_TABLE })
@Index('rm_claim_check_expires_at_idx', ['expiresAt'])
export class ClaimCheckBodyEntity {
  /** A UUID v7, also the last part of the message's `rm-claim-check` reference. */
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'rm_claim_check_pkey' })
  id!: string;

  @Column({ type: 'bytea' })
  body!: Buffer;

  @Column({ name: 'message_type', type: 'text' })
  messageType!: string;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  /** The pruner deletes the row from this instant on. */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
