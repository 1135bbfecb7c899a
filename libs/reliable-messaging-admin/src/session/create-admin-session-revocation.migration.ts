import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the table of signed-out console sessions (`rm_admin_session_revocation`); matches `AdminSessionRevocationEntity`. */
export class CreateAdminSessionRevocation1767225600027 implements MigrationInterface {
  name = 'CreateAdminSessionRevocation1767225600027';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_admin_session_revocation" (` +
        `"session_id" text NOT NULL, ` +
        `"expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, ` +
        `CONSTRAINT "rm_admin_session_revocation_pkey" PRIMARY KEY ("session_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_admin_session_revocation_expires_at_idx" ON "rm_admin_session_revocation" ("expires_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_admin_session_revocation"`);
  }
}
