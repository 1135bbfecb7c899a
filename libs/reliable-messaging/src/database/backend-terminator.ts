import pg from 'pg';
import type { EntityManager } from 'typeorm';

/** The PostgreSQL backend serving a transaction's connection, where the driver is node-postgres. */
export function backendPid(manager: EntityManager): number | undefined {
  const runner = manager.queryRunner as { databaseConnection?: { processID?: unknown } } | undefined;
  const connection = runner?.databaseConnection;
  return typeof connection?.processID === 'number' ? connection.processID : undefined;
}

/**
 * Ends the backend `pid` with `pg_terminate_backend`, over a connection of its own outside the pool (the pool
 * may be exhausted by the very handlers this frees): the server rolls its transaction back, and node-postgres
 * drops the broken connection from the pool. Only while it is still in a transaction begun before
 * `startedBefore`: had the abandoned transaction ended meanwhile, the pool may have handed the same connection to
 * other work, which must not die for it (the server's clock is compared with the app's: a server clock ahead by
 * more than the transaction's age makes this skip, never kill the wrong work). True when it terminated it.
 */
export async function terminateBackend(
  manager: EntityManager,
  pid: number,
  startedBefore: Date,
): Promise<boolean> {
  const pool = (manager.connection.driver as { master?: { options?: pg.ClientConfig } }).master;
  if (!pool?.options) return false;
  const client = new pg.Client(pool.options);
  // NOTE: a pg Client emits 'error' when its socket fails; unhandled, that would crash the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
    const result = await client.query<{ ok: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE pid = $1 AND xact_start <= $2',
      [pid, startedBefore],
    );
    return result.rows[0]?.ok === true;
  } finally {
    await client.end().catch(() => undefined);
  }
}
