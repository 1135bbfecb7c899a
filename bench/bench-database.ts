import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import {
  RELIABLE_MESSAGING_ENTITIES,
  RELIABLE_MESSAGING_MIGRATIONS,
} from 'nestjs-reliable-messaging/typeorm';

/** The PostgreSQL server the benchmarks use: `DATABASE_URL`, else the local default. Only host, port and user matter. */
export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A database of the benchmark's own with the messaging module's migrations applied. */
export interface BenchDatabase {
  readonly url: string;
  /** A DataSource on it with a pool of `poolSize` connections; destroyed by `drop()`. */
  connect(poolSize?: number): Promise<DataSource>;
  /** Destroys every DataSource opened here and drops the database. */
  drop(): Promise<void>;
}

/** Creates a fresh database `rm_bench_<hex>`, runs `setupSql` on it after the module's migrations. */
export async function createBenchDatabase(setupSql: readonly string[] = []): Promise<BenchDatabase> {
  const name = `rm_bench_${randomBytes(5).toString('hex')}`;
  await asAdmin(`CREATE DATABASE "${name}"`);
  const url = withDatabase(name);
  const opened: DataSource[] = [];
  const connect = async (poolSize = 10): Promise<DataSource> => {
    const dataSource = new DataSource({
      type: 'postgres',
      url,
      entities: [...RELIABLE_MESSAGING_ENTITIES],
      migrations: [...RELIABLE_MESSAGING_MIGRATIONS],
      migrationsRun: true,
      poolSize,
      logging: false,
    });
    await dataSource.initialize();
    opened.push(dataSource);
    return dataSource;
  };
  const first = await connect(2);
  for (const sql of setupSql) await first.query(sql);
  return {
    url,
    connect,
    async drop() {
      for (const dataSource of opened)
        if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
      await asAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/** An empty database of the benchmark's own, for an app that applies its own migrations. */
export interface EmptyBenchDatabase {
  readonly name: string;
  readonly url: string;
  /** Drops the database, closing any connection still open to it. */
  drop(): Promise<void>;
}

/** Creates an empty database `rm_bench_<hex>` on the server of DATABASE_URL. */
export async function createEmptyBenchDatabase(): Promise<EmptyBenchDatabase> {
  const name = `rm_bench_${randomBytes(5).toString('hex')}`;
  await asAdmin(`CREATE DATABASE "${name}"`);
  return {
    name,
    url: withDatabase(name),
    async drop() {
      await asAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/** Runs `sql` on the server's `postgres` database and resolves with its rows. */
export async function asAdmin(sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new Client({ connectionString: withDatabase('postgres') });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

function withDatabase(name: string): string {
  const url = new URL(DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
