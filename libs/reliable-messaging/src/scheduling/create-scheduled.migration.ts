import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the scheduled messages table (`rm_scheduled`) and its indexes; matches `ScheduledMessageEntity`. */
export class CreateScheduled1767225600027 implements MigrationInterface {
  name = 'CreateScheduled1767225600027';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_scheduled" (` +
        `"id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, ` +
        `"message_id" uuid NOT NULL, ` +
        `"idempotency_key" text NOT NULL, ` +
        `"exchange" text NOT NULL, ` +
        `"routing_key" text NOT NULL, ` +
        `"properties" jsonb NOT NULL, ` +
        `"body" bytea NOT NULL, ` +
        `"ordering_key" text, ` +
        `"deliver_at" TIMESTAMP WITH TIME ZONE NOT NULL, ` +
        `"created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `CONSTRAINT "rm_scheduled_pkey" PRIMARY KEY ("id"))`,
    );
    // The promoter's due query walks this index from its start and stops at the first row not yet due, so rows
    // due later cost it nothing however many there are.
    await queryRunner.query(
      `CREATE INDEX "rm_scheduled_deliver_at_idx" ON "rm_scheduled" ("deliver_at", "id")`,
    );
    // For cancelling by the message's id or its idempotency key.
    await queryRunner.query(`CREATE INDEX "rm_scheduled_message_id_idx" ON "rm_scheduled" ("message_id")`);
    await queryRunner.query(
      `CREATE INDEX "rm_scheduled_idempotency_key_idx" ON "rm_scheduled" ("idempotency_key")`,
    );
    // NOTE: every row is inserted once and deleted once, so the table churns like a queue; vacuuming after 2% of
    // it changed (instead of PostgreSQL's 20%) keeps dead index entries from slowing the due query's walk.
    await queryRunner.query(
      `ALTER TABLE "rm_scheduled" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_scheduled"`);
  }
}
