import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the claim-check table (`rm_claim_check`); matches `ClaimCheckBodyEntity`. */
export class CreateClaimCheck1767225600005 implements MigrationInterface {
  name = 'CreateClaimCheck1767225600005';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_claim_check" (` +
        `"id" uuid NOT NULL, ` +
        `"body" bytea NOT NULL, ` +
        `"message_type" text NOT NULL, ` +
        `"created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `"expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, ` +
        `CONSTRAINT "rm_claim_check_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_claim_check_expires_at_idx" ON "rm_claim_check" ("expires_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_claim_check"`);
  }
}
