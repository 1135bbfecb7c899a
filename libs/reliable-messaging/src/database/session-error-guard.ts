import type { DataSource } from 'typeorm';

/** The part of a pg Pool this needs. */
interface PgPool {
  on(event: 'connect', listener: (client: PgClient) => void): unknown;
  _clients?: PgClient[];
}

interface PgClient {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

const guarded = new WeakSet<object>();

/**
 * Keeps a database session that the server ends while the app holds it from crashing the process. pg-pool takes
 * its own error listener off a client while it is checked out, and TypeORM puts none on, so a session terminated
 * between two queries (`pg_terminate_backend`, a failover, a server restart) makes that client emit an `error`
 * event nobody listens to: Node ends the process. A listener on every client of the DataSource's pool, old and
 * new, takes the event instead; the holder then sees its next query fail as usual ("not queryable"), which the
 * module counts as the database being unavailable.
 */
export function guardSessionErrors(dataSource: DataSource, onError: (error: Error) => void): void {
  const pool = (dataSource.driver as { master?: unknown }).master as PgPool | undefined;
  if (!pool || typeof pool.on !== 'function') return;
  const guard = (client: PgClient): void => {
    if (guarded.has(client)) return;
    guarded.add(client);
    client.on('error', onError);
  };
  if (guarded.has(pool)) return;
  guarded.add(pool);
  pool.on('connect', guard);
  for (const client of pool._clients ?? []) guard(client);
}
