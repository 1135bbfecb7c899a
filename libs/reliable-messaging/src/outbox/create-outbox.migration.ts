import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the outbox table (`rm_outbox`) and its partial indexes; matches `OutboxMessageEntity`. */
export class CreateOutbox1767225600000 implements MigrationInterface {
  name = 'CreateOutbox1767225600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_outbox" (` +
        `"id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, ` +
        `"message_id" uuid NOT NULL, ` +
        `"exchange" text NOT NULL, ` +
        `"routing_key" text NOT NULL, ` +
        `"properties" jsonb NOT NULL, ` +
        `"body" bytea NOT NULL, ` +
        `"ordering_key" text, ` +
        `"status" text NOT NULL DEFAULT 'pending', ` +
        `"attempts" integer NOT NULL DEFAULT '0', ` +
        `"last_error" text, ` +
        `"created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `"available_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `"published_at" TIMESTAMP WITH TIME ZONE, ` +
        `"parked_at" TIMESTAMP WITH TIME ZONE, ` +
        `CONSTRAINT "rm_outbox_status_check" CHECK ("status" IN ('pending', 'published', 'parked')), ` +
        `CONSTRAINT "rm_outbox_pkey" PRIMARY KEY ("id"))`,
    );
    // The relay's claim walks pending rows in id order; published and parked rows stay out of that index.
    await queryRunner.query(
      `CREATE INDEX "rm_outbox_pending_idx" ON "rm_outbox" ("id") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_outbox_pending_key_idx" ON "rm_outbox" ("ordering_key", "id") ` +
        `WHERE "status" = 'pending' AND "ordering_key" IS NOT NULL`,
    );
    // Rows waiting out a retry: few, read once per claim to hold back the later rows of their ordering key.
    await queryRunner.query(
      `CREATE INDEX "rm_outbox_retrying_idx" ON "rm_outbox" ("ordering_key", "id") ` +
        `WHERE "status" = 'pending' AND "attempts" > 0 AND "ordering_key" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_outbox_parked_idx" ON "rm_outbox" ("id") WHERE "status" = 'parked'`,
    );
    await queryRunner.query(
      `CREATE INDEX "rm_outbox_published_at_idx" ON "rm_outbox" ("published_at") WHERE "status" = 'published'`,
    );
    // NOTE: every row is inserted, updated once and deleted, so the table churns like a queue; vacuuming after 2%
    // of it changed (instead of PostgreSQL's 20%) keeps dead rows from slowing the relay's claim.
    await queryRunner.query(
      `ALTER TABLE "rm_outbox" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_outbox"`);
  }
}
