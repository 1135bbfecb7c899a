import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Creates the idempotency keys table (`rm_idempotency_keys`), unique on (scope, idempotency key), with an index
 * on `expires_at` for the pruner; matches `IdempotencyKeyEntity`.
 */
export class CreateIdempotencyKeys1767225600004 implements MigrationInterface {
  name = 'CreateIdempotencyKeys1767225600004';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_idempotency_keys" (` +
        `"scope" text NOT NULL, ` +
        `"idempotency_key" text NOT NULL, ` +
        `"request_method" text NOT NULL, ` +
        `"request_path" text NOT NULL, ` +
        `"fingerprint" text NOT NULL, ` +
        `"response_status" smallint, ` +
        `"response_body" text, ` +
        `"created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `"expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, ` +
        `CONSTRAINT "rm_idempotency_keys_pkey" PRIMARY KEY ("scope", "idempotency_key"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_idempotency_keys_expires_at_idx" ON "rm_idempotency_keys" ("expires_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_idempotency_keys"`);
  }
}
