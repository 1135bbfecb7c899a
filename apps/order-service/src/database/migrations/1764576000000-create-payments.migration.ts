import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The payments ledger: one row per charge the payment consumer makes. There is deliberately no unique constraint
 * on `order_id`: the ledger is the record that makes a double charge visible (the fault matrix counts rows per
 * order), so a second charge must be written, not refused.
 */
export class CreatePayments1764576000000 implements MigrationInterface {
  name = 'CreatePayments1764576000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE payments (
        id uuid PRIMARY KEY,
        order_id uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
        amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
        message_id varchar(200),
        charged_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query('CREATE INDEX payments_order_id_idx ON payments (order_id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE payments');
  }
}
