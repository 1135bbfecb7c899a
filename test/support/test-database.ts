import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The server end-to-end specs use when `DATABASE_URL` is not set; only its host, port and user matter. */
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** A PostgreSQL database of its own for one spec, so specs never see each other's rows. */
export interface TestDatabase {
  /** Its name, `rm_e2e_<random hex>`. */
  readonly name: string;
  /** A connection URL for it, on the server `DATABASE_URL` names. */
  readonly url: string;
  /** Closes every connection to it and drops it. Safe to call more than once. */
  drop(): Promise<void>;
}

/**
 * Creates a fresh, uniquely named database on the server of `serverUrl` (default: `DATABASE_URL`, else
 * {@link DEFAULT_DATABASE_URL}). Create it in `beforeAll` and drop it in `afterAll`.
 */
export async function createTestDatabase(
  serverUrl: string = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
): Promise<TestDatabase> {
  const name = `rm_e2e_${randomBytes(6).toString('hex')}`;
  await asAdmin(serverUrl, (client) => client.query(`CREATE DATABASE ${quoteIdentifier(name)}`));
  let dropped = false;
  return {
    name,
    url: withDatabase(serverUrl, name),
    async drop() {
      if (dropped) return;
      // NOTE: WITH (FORCE) terminates the database's backends and drops it in one statement, so a pool that
      // reconnects between a separate pg_terminate_backend() and the DROP cannot make the drop fail.
      await asAdmin(serverUrl, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`),
      );
      dropped = true;
    },
  };
}

/** Runs `work` on a short-lived connection to the server's `postgres` maintenance database. */
async function asAdmin(serverUrl: string, work: (client: Client) => Promise<unknown>): Promise<void> {
  const client = new Client({ connectionString: withDatabase(serverUrl, 'postgres') });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
