import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the dead-letter audit table (`rm_dead_letter_audit`); matches `DeadLetterAuditEntity`. */
export class CreateDeadLetterAudit1767225600003 implements MigrationInterface {
  name = 'CreateDeadLetterAudit1767225600003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_dead_letter_audit" (` +
        `"id" uuid NOT NULL, ` +
        `"action" text NOT NULL, ` +
        `"actor" text NOT NULL, ` +
        `"queue" text, ` +
        `"selection" jsonb NOT NULL, ` +
        `"message_ids" jsonb NOT NULL DEFAULT '[]'::jsonb, ` +
        `"message_count" integer NOT NULL DEFAULT 0, ` +
        `"outcome" text NOT NULL, ` +
        `"details" jsonb NOT NULL DEFAULT '{}'::jsonb, ` +
        `"started_at" TIMESTAMP WITH TIME ZONE NOT NULL, ` +
        `"finished_at" TIMESTAMP WITH TIME ZONE, ` +
        `CONSTRAINT "rm_dead_letter_audit_action_check" CHECK ("action" IN ('replay', 'edit-replay', 'purge')), ` +
        `CONSTRAINT "rm_dead_letter_audit_outcome_check" CHECK ("outcome" IN ('started', 'completed', 'failed')), ` +
        `CONSTRAINT "rm_dead_letter_audit_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_dead_letter_audit_started_at_idx" ON "rm_dead_letter_audit" ("started_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_dead_letter_audit"`);
  }
}
