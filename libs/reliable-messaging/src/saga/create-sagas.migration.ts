import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Creates the saga tables: `rm_saga`, one row per instance, unique on (saga, correlation key), and
 * `rm_saga_history`, one row per message a step handled, deleted with its instance. Matches `SagaInstanceEntity`
 * and `SagaHistoryEntity`.
 */
export class CreateSagas1767225600040 implements MigrationInterface {
  name = 'CreateSagas1767225600040';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_saga" (` +
        `"id" bigint GENERATED ALWAYS AS IDENTITY, ` +
        `"saga" text NOT NULL, ` +
        `"correlation_key" text NOT NULL, ` +
        `"status" text NOT NULL, ` +
        `"state" jsonb NOT NULL, ` +
        `"version" integer NOT NULL, ` +
        `"timeouts" jsonb NOT NULL DEFAULT '[]', ` +
        `"created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `"updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `"completed_at" TIMESTAMP WITH TIME ZONE, ` +
        `CONSTRAINT "rm_saga_pkey" PRIMARY KEY ("id"), ` +
        `CONSTRAINT "rm_saga_instance_key" UNIQUE ("saga", "correlation_key"), ` +
        `CONSTRAINT "rm_saga_status_check" CHECK ("status" IN ('active', 'completed')), ` +
        `CONSTRAINT "rm_saga_version_check" CHECK ("version" > 0))`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_saga_completed_at_idx" ON "rm_saga" ("completed_at") WHERE "completed_at" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE TABLE "rm_saga_history" (` +
        `"id" bigint GENERATED ALWAYS AS IDENTITY, ` +
        `"saga_id" bigint NOT NULL, ` +
        `"version" integer NOT NULL, ` +
        `"message_id" text NOT NULL, ` +
        `"message_type" text NOT NULL, ` +
        `"step" text NOT NULL, ` +
        `"outcome" text NOT NULL, ` +
        `"handled_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `CONSTRAINT "rm_saga_history_pkey" PRIMARY KEY ("id"), ` +
        `CONSTRAINT "rm_saga_history_saga_fkey" FOREIGN KEY ("saga_id") REFERENCES "rm_saga" ("id") ON DELETE CASCADE)`,
    );
    await queryRunner.query(`CREATE INDEX "rm_saga_history_saga_idx" ON "rm_saga_history" ("saga_id", "id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_saga_history"`);
    await queryRunner.query(`DROP TABLE "rm_saga"`);
  }
}
