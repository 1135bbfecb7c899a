import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The order history: one row per status change an ordered consumer handled. Like the payments ledger it has no
 * unique constraint on (recorder, order, sequence): a change handled twice must show, not be refused.
 */
export class CreateOrderHistory1767312000000 implements MigrationInterface {
  name = 'CreateOrderHistory1767312000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE order_history (
        position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        recorder text NOT NULL CHECK (recorder IN ('history', 'activity')),
        order_id uuid NOT NULL,
        status text NOT NULL,
        sequence integer NOT NULL,
        handled_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query('CREATE INDEX order_history_order_idx ON order_history (order_id, position)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE order_history');
  }
}
