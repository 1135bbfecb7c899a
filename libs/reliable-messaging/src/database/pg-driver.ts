import type pg from 'pg';
import type { DataSource } from 'typeorm';

/**
 * The node-postgres module the DataSource's driver loaded (TypeORM's PostgresDriver keeps it as `postgres`, the
 * `driver` option or its own `require('pg')`), or undefined for another driver or pg-native.
 *
 * NOTE: taken from TypeORM rather than imported, so that `pg` loads only in an app that configured a PostgreSQL
 * DataSource, and so that this code drives the very copy of pg that made the connections it works on.
 */
export function driverModule(dataSource: DataSource): typeof pg | undefined {
  const postgres = (dataSource.driver as { postgres?: unknown }).postgres as Partial<typeof pg> | undefined;
  return typeof postgres?.Client === 'function' && typeof postgres.Query === 'function'
    ? (postgres as typeof pg)
    : undefined;
}
