import { Column, Entity, PrimaryColumn, type MigrationInterface, type QueryRunner } from 'typeorm';

@Entity({ name: 'shipments' })
export class Shipment {
  @PrimaryColumn({ name: 'order_id', type: 'text' }) orderId!: string;
  @Column({ name: 'total_cents', type: 'integer' }) totalCents!: number;
}

export class CreateShipments1767225700000 implements MigrationInterface {
  async up(runner: QueryRunner): Promise<void> {
    await runner.query('CREATE TABLE shipments (order_id text PRIMARY KEY, total_cents integer NOT NULL)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE shipments');
  }
}
