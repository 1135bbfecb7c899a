import type pg from 'pg';
import type { PoolClient } from 'pg';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { preparedCommand, type PreparedStatement } from './prepared-query';
import { dataSourceOf } from './data-source-of';
import { driverModule } from './pg-driver';

/** What pg's Query does on the wire, which a pipelined BEGIN extends; not in pg's type declarations. */
interface PgConnection {
  parse(message: { text: string; name?: string }): void;
  bind(message: { portal?: string; statement?: string; values?: unknown[] }): void;
  execute(message: { portal?: string }): void;
}
interface PgQueryInternals {
  prepare(connection: PgConnection): void;
}
type PgQueryClass = new (
  config: { name: string; text: string; values: unknown[] },
  values: undefined,
  callback: (error: Error | null, results: pg.QueryResult | pg.QueryResult[]) => void,
) => PgQueryInternals & { text: string; name: string; begin: string };

/**
 * A named prepared statement preceded by BEGIN in the same write and the same round trip: Parse/Bind/Execute of
 * BEGIN, then the statement's Bind/Describe/Execute, then one Sync, as the extended query protocol allows (libpq's
 * pipeline mode does the same). One ReadyForQuery ends both, so pg's client sees one query; BEGIN's command
 * completes first and the statement's result comes last.
 *
 * NOTE: pg has no pipelining API short of a pool-wide `pipeline` option, so this extends its Query's `prepare()`,
 * which writes the statement's messages (corked into one write by `submit()`). Only for a statement the
 * connection has parsed already: a Parse of it ahead of BEGIN would take a snapshot, which BEGIN with an
 * isolation level refuses, and one behind BEGIN would be marked parsed by BEGIN's ParseComplete (pg credits the
 * first ParseComplete to the active query) before the server had answered for it.
 */
function beginThenQueryClass(Query: PgQueryClass): PgQueryClass {
  return class BeginThenQuery extends Query {
    override prepare(connection: PgConnection): void {
      connection.parse({ text: this.begin });
      connection.bind({});
      connection.execute({});
      super.prepare(connection);
    }
  };
}

/** One subclass per copy of pg (an app has one; the cache keeps it from being made per transaction). */
const beginThenQueries = new WeakMap<object, PgQueryClass>();

function beginThenQuery(postgres: typeof pg): PgQueryClass {
  let Query = beginThenQueries.get(postgres);
  if (!Query) {
    Query = beginThenQueryClass(postgres.Query as unknown as PgQueryClass);
    beginThenQueries.set(postgres, Query);
  }
  return Query;
}

/**
 * Sends BEGIN and `statement`, in one round trip once the connection has parsed `statement` (in two the first
 * time); resolves with the number of rows `statement` affected.
 */
async function beginThen(
  postgres: typeof pg,
  client: PoolClient,
  begin: string,
  statement: PreparedStatement,
): Promise<number> {
  if (!hasParsed(client, statement.name)) {
    await client.query(begin);
    return (await client.query(statement)).rowCount ?? 0;
  }
  return new Promise((resolve, reject) => {
    const BeginThenQuery = beginThenQuery(postgres);
    const query = new BeginThenQuery(statement, undefined, (error, results) => {
      if (error) reject(error);
      else resolve((Array.isArray(results) ? results[results.length - 1] : results).rowCount ?? 0);
    });
    query.begin = begin;
    // The query reports through its callback; pg returns the query itself for a submittable, not a promise.
    void client.query(query as unknown as pg.QueryConfig);
  });
}

/** Whether the server holds the prepared statement `name` on this connection, by pg's own record of it. */
function hasParsed(client: PoolClient, name: string): boolean {
  const connection = (client as unknown as { connection?: { parsedStatements?: Record<string, unknown> } })
    .connection;
  return connection?.parsedStatements?.[name] !== undefined;
}

/**
 * A query runner's transaction state, which TypeORM's own transaction methods keep: read-only and protected in its
 * types. Nested `manager.transaction()` calls read the depth; the outbox writer reads `isTransactionActive`.
 */
type RunnerState = { transactionDepth: number; isTransactionActive: boolean };

/**
 * Runs `work` in a new transaction on `dataSource` that begins with `first`, sent with BEGIN in one round trip;
 * `work` gets the transaction's EntityManager and the number of rows `first` affected. Commits when `work`
 * resolves, rolls back when it or the commit fails, and releases the connection either way.
 *
 * This is what `dataSource.transaction()` does, with one round trip fewer per transaction and without TypeORM's
 * per-query bookkeeping (BEGIN and COMMIT go to the driver's client): the query runner, its manager, its
 * transaction state (nested `manager.transaction()` calls become savepoints) and the DataSource's transaction
 * events (`afterTransactionCommit`, …, which the outbox's commit signal listens to) stay as TypeORM's own.
 * The DataSource's `isolationLevel` applies. A DataSource whose driver is not node-postgres gets
 * `dataSource.transaction()` and `first` as a query in it.
 */
export async function runTransactionStartingWith<T>(
  dataSource: DataSource,
  first: PreparedStatement,
  work: (manager: EntityManager, affected: number) => Promise<T>,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  try {
    const client = (await runner.connect()) as PoolClient | undefined;
    const postgres = driverModule(dataSource);
    if (!postgres || !isPgClient(client)) {
      await runner.release();
      return await dataSource.transaction(async (manager) =>
        work(manager, await preparedCommand(manager, first)),
      );
    }
    const state = runner as unknown as RunnerState;
    state.isTransactionActive = true;
    let result: T;
    try {
      await broadcast(runner, 'BeforeTransactionStart');
      const affected = await beginThen(postgres, client, beginStatement(dataSource), first);
      state.transactionDepth = 1;
      await broadcast(runner, 'AfterTransactionStart');
      result = await work(runner.manager, affected);
      await broadcast(runner, 'BeforeTransactionCommit');
      await client.query('COMMIT');
    } catch (error) {
      await rollBack(runner, client);
      throw error;
    }
    endTransaction(runner);
    await broadcast(runner, 'AfterTransactionCommit');
    return result;
  } finally {
    if (!runner.isReleased) await runner.release();
  }
}

/** As TypeORM's `rollbackTransaction()`, but a failure to roll back (a session already gone) is not thrown. */
async function rollBack(runner: QueryRunner, client: PoolClient): Promise<void> {
  try {
    await broadcast(runner, 'BeforeTransactionRollback');
    await client.query('ROLLBACK');
    endTransaction(runner);
    await broadcast(runner, 'AfterTransactionRollback');
  } catch {
    // The caller's error is the one that counts; a session that ended has rolled back on the server anyway.
  }
}

type TransactionEvent =
  | 'BeforeTransactionStart'
  | 'AfterTransactionStart'
  | 'BeforeTransactionCommit'
  | 'AfterTransactionCommit'
  | 'BeforeTransactionRollback'
  | 'AfterTransactionRollback';

/**
 * Sends a transaction event to the DataSource's subscribers, as TypeORM's own transaction methods do; only when
 * one of them listens to it, since each broadcast costs several promises per message.
 */
async function broadcast(runner: QueryRunner, event: TransactionEvent): Promise<void> {
  const hook = `${event[0].toLowerCase()}${event.slice(1)}`;
  const subscribers = dataSourceOf(runner).subscribers as unknown as Record<string, unknown>[];
  if (subscribers.some((subscriber) => typeof subscriber[hook] === 'function')) {
    await runner.broadcaster.broadcast(event);
  }
}

function endTransaction(runner: QueryRunner): void {
  const state = runner as unknown as RunnerState;
  state.isTransactionActive = false;
  state.transactionDepth = 0;
}

function beginStatement(dataSource: DataSource): string {
  const level = dataSource.options.isolationLevel;
  return level ? `START TRANSACTION ISOLATION LEVEL ${level}` : 'START TRANSACTION';
}

/** node-postgres' client, whichever copy of pg TypeORM loaded: it takes pg's Query objects (any `submit()`-able). */
function isPgClient(client: unknown): client is PoolClient {
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof (client as PoolClient).query === 'function' &&
    typeof (client as { connection?: { parse?: unknown } }).connection?.parse === 'function'
  );
}
