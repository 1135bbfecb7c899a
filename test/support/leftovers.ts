import { execFileSync } from 'node:child_process';
import { Client } from 'pg';
import { DEFAULT_DATABASE_URL } from './test-database';

/** Whether the PostgreSQL server still has database `name`: what a child app or benchmark should have dropped. */
export async function databaseExists(name: string): Promise<boolean> {
  const url = new URL(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

/** Queues and exchanges the broker still has under `prefix` (needs the broker on this machine). */
export function brokerObjectsUnder(prefix: string): string[] {
  return ['list_queues', 'list_exchanges'].flatMap((command) =>
    execFileSync('rabbitmqctl', ['-q', command, '--no-table-headers', 'name'])
      .toString()
      .split('\n')
      .filter((name) => name.startsWith(`${prefix}.`)),
  );
}
