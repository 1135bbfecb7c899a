import type { DataSource } from 'typeorm';
import type { ConsumerPlan } from '../consuming/consumer-plan';

/** Connections in the DataSource's pool, where the driver is known; the drivers' own defaults otherwise. */
export function databasePoolSize(dataSource: DataSource): number | undefined {
  const options = dataSource.options as {
    type?: string;
    poolSize?: number;
    extra?: { max?: number; connectionLimit?: number };
  };
  switch (options.type) {
    case 'postgres':
    case 'cockroachdb':
      return options.poolSize ?? options.extra?.max ?? 10;
    case 'mysql':
    case 'mariadb':
      return options.poolSize ?? options.extra?.connectionLimit ?? 10;
    default:
      return options.poolSize;
  }
}

/**
 * A warning when the consumers together may run more handlers at once than the database pool has connections:
 * the excess handlers then wait for a connection, inside their deadline. Undefined when the pool is large enough.
 */
export function poolCapacityWarning(
  consumers: readonly ConsumerPlan[],
  dataSource: DataSource,
): string | undefined {
  const pool = databasePoolSize(dataSource);
  const total = consumers.reduce((sum, consumer) => sum + consumer.concurrency, 0);
  if (pool === undefined || total <= pool) return undefined;
  const parts = consumers.map((consumer) => `${consumer.name} ${consumer.concurrency}`).join(', ');
  return (
    `consumers may run ${total} handlers at once (${parts}) but the database pool has ${pool} connections; ` +
    `handlers will wait for a connection and may run past their deadline. Lower 'concurrency' or raise the pool size (poolSize)`
  );
}
