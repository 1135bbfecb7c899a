import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The orders and their lines. Amounts are integer cents; the status is one of a closed set. */
export class CreateOrders1764403200000 implements MigrationInterface {
  name = 'CreateOrders1764403200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE orders (
        id uuid PRIMARY KEY,
        customer_id varchar(100) NOT NULL,
        status varchar(16) NOT NULL CHECK (status IN ('placed', 'paid', 'shipped')),
        total_cents bigint NOT NULL CHECK (total_cents >= 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        payment_id uuid,
        paid_at timestamptz,
        shipped_at timestamptz,
        receipt_id varchar(100),
        receipt_sent_at timestamptz
      )`);
    await queryRunner.query(`
      CREATE TABLE order_items (
        order_id uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
        line smallint NOT NULL CHECK (line >= 1),
        sku varchar(64) NOT NULL,
        quantity integer NOT NULL CHECK (quantity >= 1),
        unit_price_cents bigint NOT NULL CHECK (unit_price_cents >= 0),
        PRIMARY KEY (order_id, line)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE order_items');
    await queryRunner.query('DROP TABLE orders');
  }
}
