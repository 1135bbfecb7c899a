import { Client } from 'pg';
import { pause, type Fault, type FaultContext } from './fault';
import { postgres } from './system-services';

/** The harness's own connections carry this name, so that terminating the app's sessions spares them. */
export const HARNESS_APPLICATION_NAME = 'fault-matrix';
/** At most this many connections are opened to reach the limit, in case the server has none. */
const MAX_FILLER_CONNECTIONS = 1_000;

/** Terminates every session on the run's database but the harness's; resolves with how many. */
async function terminateAppSessions(context: FaultContext, client?: Client): Promise<number> {
  const sql = `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
     WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name NOT LIKE $2`;
  const params = [context.environment.databaseName, `${HARNESS_APPLICATION_NAME}%`];
  const result = client ? await client.query(sql, params) : await context.database.query(sql, params);
  return (result.rows[0] as { n: number }).n;
}

/** Restarts PostgreSQL unless it runs: how every database fault restores. */
async function ensurePostgresRunning(): Promise<void> {
  if (!(await postgres.isRunning())) await postgres.control('start');
}

/** `pg_ctlcluster <version> main restart`. */
export function postgresRestartFault(): Fault {
  return {
    name: 'pg-restart',
    description: 'PostgreSQL restarted (pg_ctlcluster restart)',
    machineWide: true,
    async inject() {
      try {
        await postgres.control('restart');
      } finally {
        await ensurePostgresRunning();
      }
    },
  };
}

/** PostgreSQL stopped for `ms`, then started. */
export function postgresStopFault(ms: number): Fault {
  return {
    name: `pg-stop-${ms / 1000}s`,
    description: `PostgreSQL stopped for ${ms / 1000} s, then started`,
    machineWide: true,
    async inject(context) {
      try {
        await postgres.control('stop');
        await pause(ms, context.signal);
      } finally {
        await ensurePostgresRunning();
      }
    },
  };
}

/** `pg_terminate_backend` of the app's sessions, three times a second apart. */
export function terminateBackendsFault(): Fault {
  return {
    name: 'pg-terminate',
    description: "pg_terminate_backend of the app's sessions, 3 times 1 s apart",
    machineWide: false,
    async inject(context) {
      const terminated: number[] = [];
      for (let round = 0; round < 3; round++) {
        if (round > 0) await pause(1_000, context.signal);
        terminated.push(await terminateAppSessions(context));
      }
      context.note(`sessions terminated: ${terminated.join(', ')}`);
    },
  };
}

/**
 * PostgreSQL at its connection limit for `ms`: the harness opens connections until the server answers "too many
 * clients", terminates the app's sessions (which then cannot reconnect), takes the freed slots too, holds, and
 * releases everything.
 */
export function connectionLimitFault(ms: number): Fault {
  return {
    name: 'pg-connection-limit',
    description: `PostgreSQL at its connection limit for ${ms / 1000} s (the app's sessions terminated meanwhile)`,
    machineWide: true,
    async inject(context) {
      const held: Client[] = [];
      try {
        await fillConnections(held, context.environment.databaseUrl);
        const terminated = await terminateAppSessions(context, held[0]);
        await fillConnections(held, context.environment.databaseUrl);
        context.note(`${held.length} connections held, ${terminated} app session(s) terminated`);
        await pause(ms, context.signal);
      } finally {
        await Promise.all(held.map((client) => client.end().catch(() => undefined)));
      }
    },
  };
}

/** Opens connections into `held` until the server refuses one with "too many clients". */
async function fillConnections(held: Client[], databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  url.pathname = '/postgres';
  while (held.length < MAX_FILLER_CONNECTIONS) {
    const client = new Client({
      connectionString: url.toString(),
      application_name: `${HARNESS_APPLICATION_NAME}-filler`,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      held.push(client);
    } catch (error) {
      await client.end().catch(() => undefined);
      if ((error as { code?: string }).code === '53300') return;
      throw error;
    }
  }
  throw new Error(`${MAX_FILLER_CONNECTIONS} connections opened without reaching the limit`);
}
