import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { BenchDatabase } from './bench-database';
import { rawEnvelope } from './bench-message';
import { alternate, ROUNDS, type Comparison, type Measurement } from './harness';

const run = promisify(execFile);

/** An order id unique per client and transaction (pgbench's variables are numbers, so it is built in SQL). */
const ORDER_ID = "'order-' || :client_id || '-' || :i";

/** The business transaction of the write-cost runs, as a pgbench script: each client numbers its own orders. */
const ORDER_SCRIPT = [
  '\\set i :i + 1',
  '\\set customer (:client_id * 31 + :i) % 97',
  'BEGIN;',
  `INSERT INTO orders (id, customer_id, total_cents, status) VALUES (${ORDER_ID}, :customer, 3000, 'placed');`,
  ...[1, 2, 3].map(
    (line) =>
      `INSERT INTO order_items (order_id, line, sku, quantity, unit_price_cents) ` +
      `VALUES (${ORDER_ID}, ${line}, 'sku-${line}', ${line}, 1000);`,
  ),
  'UPDATE customers SET order_count = order_count + 1 WHERE id = :customer;',
];

/**
 * The outbox row the module writes for the write-cost message. Its properties and body come in as pgbench
 * variables (`--define`), so they are bound as parameters, as the module binds them.
 */
function outboxRowStatement(exchange: string): string {
  return (
    `INSERT INTO "rm_outbox" ("message_id", "exchange", "routing_key", "properties", "body") ` +
    `VALUES (gen_random_uuid(), '${exchange}', 'bench.order-placed', :properties, :body);`
  );
}

/** The pgbench variables of the outbox row: the write-cost message's properties and its body in bytea's hex form. */
function outboxRowVariables(): string[] {
  const { body, properties } = rawEnvelope(0);
  return [`--define=properties=${JSON.stringify(properties)}`, `--define=body=\\x${body.toString('hex')}`];
}

/**
 * The connection as libpq's environment variables, so that no password stands in pgbench's command line (where
 * `ps` and a failed command's error message would show it).
 */
function libpqEnvironment(url: string): Record<string, string> {
  const { hostname, port, username, password, pathname } = new URL(url);
  return {
    PGHOST: hostname,
    PGPORT: port || '5432',
    PGUSER: decodeURIComponent(username),
    PGPASSWORD: decodeURIComponent(password),
    PGDATABASE: decodeURIComponent(pathname.slice(1)),
  };
}

/** True when PostgreSQL's pgbench is on the PATH. */
function havePgbench(): boolean {
  return spawnSync('pgbench', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * The write-cost floor as PostgreSQL's own C client sees it: the same six-statement transaction from pgbench,
 * without and with one more statement (a bare `SELECT 1`, then the outbox row), `clients` at once. No Node, no
 * TypeORM, no module: what one more statement in the transaction costs this machine's database. Skipped, with a
 * line saying so, when pgbench is not installed.
 */
export async function pgbenchFloor(
  db: BenchDatabase,
  exchange: string,
  transactions: number,
  clients: number,
): Promise<Comparison[]> {
  if (!havePgbench()) {
    console.log('pgbench not found on the PATH: the write-cost floor lines are skipped');
    return [];
  }
  const dataSource = await db.connect(1);
  const folder = await mkdtemp(join(tmpdir(), 'rm-bench-pgbench-'));
  try {
    const script = async (name: string, extra: string[]): Promise<string> => {
      const path = join(folder, `${name}.sql`);
      await writeFile(path, [...ORDER_SCRIPT, ...extra, 'COMMIT;', ''].join('\n'));
      return path;
    };
    const perClient = Math.max(1, Math.ceil(transactions / clients));
    const variables = outboxRowVariables();
    const env = { ...process.env, ...libpqEnvironment(db.url) };
    const measure = async (path: string): Promise<Measurement> => {
      await dataSource.query('TRUNCATE orders, order_items, rm_outbox');
      const { stdout } = await run(
        'pgbench',
        [
          '--no-vacuum',
          '--protocol=prepared',
          `--client=${clients}`,
          '--jobs=2',
          `--transactions=${perClient}`,
          '--define=i=0',
          ...variables,
          `--file=${path}`,
        ],
        { env },
      );
      const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
      if (!tps) throw new Error(`pgbench printed no tps line:\n${stdout}`);
      const messages = perClient * clients;
      // pgbench's CPU is another process's, so none is reported for this line.
      return { messages, seconds: messages / Number(tps[1]), cpuMicros: Number.NaN };
    };
    const base = await script('order', []);
    const comparisons: Comparison[] = [];
    for (const [extra, label] of [
      ['SELECT 1;', 'a bare SELECT 1'],
      [outboxRowStatement(exchange), 'the same outbox row'],
    ]) {
      const withExtra = await script(label.replace(/\W+/g, '-'), [extra]);
      const runs = await alternate(
        ROUNDS,
        () => measure(base),
        () => measure(withExtra),
      );
      comparisons.push({
        suite: 'outbox write',
        scenario:
          `order with 3 lines and a customer update (6 statements), ${clients} concurrent, from pgbench ` +
          `(PostgreSQL's own client: no Node, no TypeORM), transactions/s without vs with ${label} ` +
          `(the database's floor)`,
        ...runs,
        target: 0,
      });
    }
    await dataSource.query('TRUNCATE orders, order_items, rm_outbox');
    return comparisons;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
