import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Lets the dead-letter audit trail (`rm_dead_letter_audit`) record the operator's actions on parked outbox rows,
 * `outbox-retry` and `outbox-discard`, beside replays, edits and purges; matches `DeadLetterAuditEntity`.
 */
export class AllowOutboxAuditActions1767225600006 implements MigrationInterface {
  name = 'AllowOutboxAuditActions1767225600006';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "rm_dead_letter_audit" DROP CONSTRAINT "rm_dead_letter_audit_action_check", ` +
        `ADD CONSTRAINT "rm_dead_letter_audit_action_check" ` +
        `CHECK ("action" IN ('replay', 'edit-replay', 'purge', 'outbox-retry', 'outbox-discard'))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "rm_dead_letter_audit" DROP CONSTRAINT "rm_dead_letter_audit_action_check", ` +
        `ADD CONSTRAINT "rm_dead_letter_audit_action_check" CHECK ("action" IN ('replay', 'edit-replay', 'purge'))`,
    );
  }
}
