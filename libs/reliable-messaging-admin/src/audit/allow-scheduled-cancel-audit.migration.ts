import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Lets the audit trail (`rm_dead_letter_audit`) record the operator's cancels of scheduled messages
 * (`scheduled-cancel`); matches `DeadLetterAuditEntity`.
 */
export class AllowScheduledCancelAudit1767225600041 implements MigrationInterface {
  name = 'AllowScheduledCancelAudit1767225600041';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "rm_dead_letter_audit" DROP CONSTRAINT "rm_dead_letter_audit_action_check", ` +
        `ADD CONSTRAINT "rm_dead_letter_audit_action_check" ` +
        `CHECK ("action" IN ('replay', 'edit-replay', 'purge', 'outbox-retry', 'outbox-discard', 'scheduled-cancel', 'read', 'token-refused', 'sign-in-failed'))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "rm_dead_letter_audit" DROP CONSTRAINT "rm_dead_letter_audit_action_check", ` +
        `ADD CONSTRAINT "rm_dead_letter_audit_action_check" ` +
        `CHECK ("action" IN ('replay', 'edit-replay', 'purge', 'outbox-retry', 'outbox-discard', 'read', 'token-refused', 'sign-in-failed'))`,
    );
  }
}
