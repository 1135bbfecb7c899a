import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Adds the caller to `rm_idempotency_keys` and to its primary key, now (scope, caller, idempotency key): keys of
 * two callers never meet. Rows stored before it name no caller, so they become the anonymous caller's: a retry
 * without an identity still finds its key, one with an identity runs as a new request. Matches
 * `IdempotencyKeyEntity`.
 */
export class ScopeIdempotencyKeysByCaller1767225600026 implements MigrationInterface {
  name = 'ScopeIdempotencyKeysByCaller1767225600026';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "rm_idempotency_keys" ADD "caller" text NOT NULL DEFAULT 'anonymous'`,
    );
    await queryRunner.query(`ALTER TABLE "rm_idempotency_keys" ALTER COLUMN "caller" DROP DEFAULT`);
    await queryRunner.query(
      `ALTER TABLE "rm_idempotency_keys" DROP CONSTRAINT "rm_idempotency_keys_pkey", ` +
        `ADD CONSTRAINT "rm_idempotency_keys_pkey" PRIMARY KEY ("scope", "caller", "idempotency_key")`,
    );
  }

  /** Keeps the newest row of each (scope, key) that two callers share, as the older primary key allows one. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DELETE FROM "rm_idempotency_keys" k USING "rm_idempotency_keys" newer ` +
        `WHERE newer."scope" = k."scope" AND newer."idempotency_key" = k."idempotency_key" ` +
        `AND (newer."created_at", newer."caller") > (k."created_at", k."caller")`,
    );
    await queryRunner.query(
      `ALTER TABLE "rm_idempotency_keys" DROP CONSTRAINT "rm_idempotency_keys_pkey", ` +
        `ADD CONSTRAINT "rm_idempotency_keys_pkey" PRIMARY KEY ("scope", "idempotency_key")`,
    );
    await queryRunner.query(`ALTER TABLE "rm_idempotency_keys" DROP COLUMN "caller"`);
  }
}
