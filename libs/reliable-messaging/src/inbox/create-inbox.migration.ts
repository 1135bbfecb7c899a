import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the inbox table (`rm_inbox`), unique on (consumer, idempotency key); matches `InboxMessageEntity`. */
export class CreateInbox1767225600001 implements MigrationInterface {
  name = 'CreateInbox1767225600001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "rm_inbox" (` +
        `"consumer" text NOT NULL, ` +
        `"idempotency_key" text NOT NULL, ` +
        `"message_id" text NOT NULL, ` +
        `"message_type" text NOT NULL, ` +
        `"processed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), ` +
        `CONSTRAINT "rm_inbox_pkey" PRIMARY KEY ("consumer", "idempotency_key"))`,
    );
    await queryRunner.query(`CREATE INDEX "rm_inbox_processed_at_idx" ON "rm_inbox" ("processed_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rm_inbox"`);
  }
}
