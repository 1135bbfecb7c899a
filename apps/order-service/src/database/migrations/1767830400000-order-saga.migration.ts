import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the order saga adds: cancelled orders (the payment timed out, or the order could not be shipped and its
 * payment was refunded), and the payment gateway's refunds and voided payment requests. Refunds are unique per
 * payment: a payment is refunded once, whatever is redelivered.
 */
export class OrderSaga1767830400000 implements MigrationInterface {
  name = 'OrderSaga1767830400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE orders DROP CONSTRAINT orders_status_check');
    await queryRunner.query(
      `ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('placed', 'paid', 'shipped', 'cancelled'))`,
    );
    await queryRunner.query(
      `ALTER TABLE orders ADD COLUMN cancelled_at timestamptz, ADD COLUMN cancel_reason varchar(32)`,
    );
    await queryRunner.query(`
      CREATE TABLE refunds (
        payment_id uuid PRIMARY KEY REFERENCES payments (id) ON DELETE CASCADE,
        order_id uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
        amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
        refunded_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query('CREATE INDEX refunds_order_id_idx ON refunds (order_id)');
    await queryRunner.query(`
      CREATE TABLE payment_voids (
        order_id uuid PRIMARY KEY REFERENCES orders (id) ON DELETE CASCADE,
        voided_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE payment_voids');
    await queryRunner.query('DROP TABLE refunds');
    await queryRunner.query('ALTER TABLE orders DROP COLUMN cancel_reason, DROP COLUMN cancelled_at');
    await queryRunner.query('ALTER TABLE orders DROP CONSTRAINT orders_status_check');
    await queryRunner.query(
      `ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('placed', 'paid', 'shipped'))`,
    );
  }
}
