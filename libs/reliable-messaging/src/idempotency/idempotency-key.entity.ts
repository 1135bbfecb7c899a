import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** The idempotency keys table's name. */
export const IDEMPOTENCY_KEYS_TABLE = 'rm_idempotency_keys';

/**
 * An `Idempotency-Key` an `@Idempotent()` route handled, with the fingerprint of the request and the response
 * it answered. The row commits in the handler's own transaction, so a retry after the commit finds it, even when
 * the process died before the response left. The table comes from `CreateIdempotencyKeys1767225600004` and
 * `ScopeIdempotencyKeysByCaller1767225600026`, never from `synchronize`.
 */
@Entity({ name: IDEMPOTENCY_KEYS_TABLE })
@Index('rm_idempotency_keys_expires_at_idx', ['expiresAt'])
export class IdempotencyKeyEntity {
  /** The route's scope (`@Idempotent({ scope })`, by default `<Controller>.<method>`): keys of two scopes never meet. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'rm_idempotency_keys_pkey' })
  scope!: string;

  /**
   * Who sent the request: SHA-256, hex, of what `identifyCaller` returned, or `anonymous` for a request without
   * an identity. Keys of two callers never meet.
   */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'rm_idempotency_keys_pkey' })
  caller!: string;

  @PrimaryColumn({
    name: 'idempotency_key',
    type: 'text',
    primaryKeyConstraintName: 'rm_idempotency_keys_pkey',
  })
  idempotencyKey!: string;

  @Column({ name: 'request_method', type: 'text' })
  requestMethod!: string;

  /** The request's path and query, as sent. */
  @Column({ name: 'request_path', type: 'text' })
  requestPath!: string;

  /** SHA-256, hex, of the method, path and canonical JSON body (see `requestFingerprint()`). */
  @Column({ type: 'text' })
  fingerprint!: string;

  /** The status answered; null only inside the transaction that is still running the handler. */
  @Column({ name: 'response_status', type: 'smallint', nullable: true })
  responseStatus!: number | null;

  /** The body answered, as JSON text; null when the handler returned nothing. */
  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  /** After this the key is forgotten: a request with it runs the handler again, and the pruner deletes the row. */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
