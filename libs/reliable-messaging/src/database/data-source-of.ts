import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

/**
 * The DataSource of a query runner or an EntityManager, in TypeORM 1.x and 0.3 alike.
 *
 * NOTE: 1.x calls it `dataSource` and deprecates `connection`; 0.3 has only `connection`.
 */
export function dataSourceOf(owner: QueryRunner | EntityManager): DataSource {
  const { dataSource, connection } = owner as unknown as { dataSource?: DataSource; connection: DataSource };
  return dataSource ?? connection;
}
