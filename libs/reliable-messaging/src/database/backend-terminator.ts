import type pg from 'pg';
import type { EntityManager } from 'typeorm';
import { dataSourceOf } from './data-source-of';
import { driverModule } from './pg-driver';

/** The PostgreSQL backend serving a transaction's connection, where the driver is node-postgres. */
export function backendPid(manager: EntityManager): number | undefined {
  const runner = manager.queryRunner as { databaseConnection?: { processID?: unknown } } | undefined;
  const connection = runner?.databaseConnection;
  return typeof connection?.processID === 'number' ? connection.processID : undefined;
}

/**
 * Closes the connection of a transaction's query runner at once, where the driver is node-postgres: PostgreSQL
 * rolls the transaction back when the session ends, statements waiting on the client fail, and so does every
 * later one (the client is closed, and the pool drops it when the query runner releases it).
 */
export function endSession(manager: EntityManager): void {
  const runner = manager.queryRunner as { databaseConnection?: { end?: () => Promise<void> } } | undefined;
  runner?.databaseConnection?.end?.().catch(() => undefined);
}

/** How long the terminator may take to connect, and each of its statements to answer. */
const TERMINATOR_TIMEOUT_MS = 5_000;
/** How long it waits for a terminated backend to be gone, and how often it looks. */
const GONE_WAIT_MS = 2_000;
const GONE_POLL_MS = 20;

/**
 * Ends the backend `pid` with `pg_terminate_backend` and waits until it is gone, over a connection of its own
 * outside the pool (the pool may be exhausted by the very handlers this frees): its transaction is rolled back
 * and its locks released before this resolves. Only while it is still in a transaction begun before
 * `startedBefore`, so a backend that has moved on to other work is never touched (the server's clock is
 * compared with the app's: a server clock ahead by more than the transaction's age makes this skip, never kill
 * the wrong work). True when it terminated it.
 */
export async function terminateBackend(
  manager: EntityManager,
  pid: number,
  startedBefore: Date,
): Promise<boolean> {
  const dataSource = dataSourceOf(manager);
  const pool = (dataSource.driver as { master?: { options?: pg.ClientConfig } }).master;
  const postgres = driverModule(dataSource);
  if (!pool?.options || !postgres) return false;
  const client = new postgres.Client({
    ...pool.options,
    connectionTimeoutMillis: TERMINATOR_TIMEOUT_MS,
    query_timeout: TERMINATOR_TIMEOUT_MS,
  });
  // NOTE: a pg Client emits 'error' when its socket fails; unhandled, that would crash the process.
  client.on('error', () => undefined);
  const stillThere = 'FROM pg_stat_activity WHERE pid = $1 AND xact_start <= $2';
  try {
    await client.connect();
    const result = await client.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok ${stillThere}`,
      [pid, startedBefore],
    );
    if (result.rows[0]?.ok !== true) return false;
    for (const deadline = Date.now() + GONE_WAIT_MS; Date.now() < deadline;) {
      const { rowCount } = await client.query(`SELECT 1 ${stillThere}`, [pid, startedBefore]);
      if (rowCount === 0) break;
      await new Promise((resolve) => setTimeout(resolve, GONE_POLL_MS));
    }
    return true;
  } finally {
    await client.end().catch(() => undefined);
  }
}
