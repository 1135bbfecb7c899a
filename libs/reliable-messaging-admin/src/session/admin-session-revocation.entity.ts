import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { ADMIN_SESSION_REVOCATION_TABLE } from './admin-session-table';

/**
 * A console session signed out before it expired: every replica refuses its cookie until `expiresAt`, when the
 * cookie would lapse anyway and the row may go. The table comes from `CreateAdminSessionRevocation1767225600027`,
 * never from `synchronize`.
 */
@Entity({ name: ADMIN_SESSION_REVOCATION_TABLE })
@Index('rm_admin_session_revocation_expires_at_idx', ['expiresAt'])
export class AdminSessionRevocationEntity {
  /** The session's random id (never the cookie, which would let a reader of the table sign in). */
  @PrimaryColumn({
    name: 'session_id',
    type: 'text',
    primaryKeyConstraintName: 'rm_admin_session_revocation_pkey',
  })
  sessionId!: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
