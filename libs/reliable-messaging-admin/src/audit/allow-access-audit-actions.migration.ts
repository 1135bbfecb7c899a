import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Lets the audit trail (`rm_dead_letter_audit`) record who read a message body (`read`) and what the admin API
 * refused (`token-refused`, `sign-in-failed`); matches `DeadLetterAuditEntity`.
 */
export class AllowAccessAuditActions1767225600026 implements MigrationInterface {
  name = 'AllowAccessAuditActions1767225600026';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "rm_dead_letter_audit" DROP CONSTRAINT "rm_dead_letter_audit_action_check", ` +
        `ADD CONSTRAINT "rm_dead_letter_audit_action_check" ` +
        `CHECK ("action" IN ('replay', 'edit-replay', 'purge', 'outbox-retry', 'outbox-discard', 'read', 'token-refused', 'sign-in-failed'))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "rm_dead_letter_audit" DROP CONSTRAINT "rm_dead_letter_audit_action_check", ` +
        `ADD CONSTRAINT "rm_dead_letter_audit_action_check" ` +
        `CHECK ("action" IN ('replay', 'edit-replay', 'purge', 'outbox-retry', 'outbox-discard'))`,
    );
  }
}
