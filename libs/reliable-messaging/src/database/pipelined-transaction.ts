import type pg from 'pg';
import type { PoolClient } from 'pg';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { preparedCommand, type PreparedStatement } from './prepared-query';
import { dataSourceOf } from './data-source-of';
import { driverModule } from './pg-driver';

/** What pg's Query does on the wire, which the pipelined BEGIN and COMMIT extend; not in pg's type declarations. */
interface PgConnection {
  parse(message: { text: string; name?: string }): void;
  bind(message: { portal?: string; statement?: string; values?: unknown[] }): void;
  execute(message: { portal?: string }): void;
  sync(): void;
}
interface PgQueryInternals {
  prepare(connection: PgConnection): void;
  /** Writes Execute and Sync once the statement is bound and described. */
  _getRows(connection: PgConnection, rows?: number): void;
}
type PgQueryClass = new (
  config: { name: string; text: string; values: unknown[] },
  values: undefined,
  callback: QueryCallback,
) => PgQueryInternals & { text: string; name: string; begin: readonly string[] };

/**
 * A named prepared statement preceded by BEGIN (and settings for the transaction, each a statement without
 * parameters) in the same write and the same round trip: Parse/Bind/Execute of each of them, then the statement's
 * Bind/Describe/Execute, then one Sync, as the extended query protocol allows (libpq's
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
      for (const text of this.begin) {
        connection.parse({ text });
        connection.bind({});
        connection.execute({});
      }
      super.prepare(connection);
    }
  };
}

/**
 * A named prepared statement followed by COMMIT in the same write and the same round trip: the statement's
 * Bind/Describe/Execute, then Parse/Bind/Execute of COMMIT, then one Sync. Should the statement fail, the server
 * skips COMMIT up to the Sync and the transaction is left failed, to be rolled back; should COMMIT fail, the
 * transaction is gone. Either way pg's client sees one query that failed. Only for a statement the connection has
 * parsed already, for the reason beginThenQueryClass gives.
 */
function queryThenCommitClass(Query: PgQueryClass): PgQueryClass {
  return class QueryThenCommit extends Query {
    override _getRows(connection: PgConnection): void {
      connection.execute({});
      connection.parse({ text: 'COMMIT' });
      connection.bind({});
      connection.execute({});
      connection.sync();
    }
  };
}

/** One subclass per copy of pg and kind (an app has one copy; the cache keeps them from being made per transaction). */
const pipelinedQueries = new WeakMap<object, { beginThen: PgQueryClass; thenCommit: PgQueryClass }>();

function pipelinedQuery(postgres: typeof pg, kind: 'beginThen' | 'thenCommit'): PgQueryClass {
  let classes = pipelinedQueries.get(postgres);
  if (!classes) {
    const Query = postgres.Query as unknown as PgQueryClass;
    classes = { beginThen: beginThenQueryClass(Query), thenCommit: queryThenCommitClass(Query) };
    pipelinedQueries.set(postgres, classes);
  }
  return classes[kind];
}

type QueryCallback = (error: Error | null, results: pg.QueryResult | pg.QueryResult[]) => void;

/** Submits the query object `make` builds to `client`; resolves with the result of the last statement it ran. */
function submit(
  client: PoolClient,
  make: (callback: QueryCallback) => PgQueryInternals,
): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    const query = make((error, results) => {
      if (error) reject(error);
      else resolve(Array.isArray(results) ? results[results.length - 1] : results);
    });
    // The query reports through its callback; pg returns the query itself for a submittable, not a promise.
    void client.query(query as unknown as pg.QueryConfig);
  });
}

/**
 * Sends `begin` (BEGIN and settings for the transaction, statements without parameters) and `statement`, in one
 * round trip once the connection has parsed `statement` (in two the first time); resolves with `statement`'s
 * result.
 */
async function beginThen(
  postgres: typeof pg,
  client: PoolClient,
  begin: readonly string[],
  statement: PreparedStatement,
): Promise<pg.QueryResult> {
  if (!hasParsed(client, statement.name)) {
    await client.query(begin.join('; '));
    return client.query(statement);
  }
  const BeginThenQuery = pipelinedQuery(postgres, 'beginThen');
  return submit(client, (callback) => {
    const query = new BeginThenQuery(statement, undefined, callback);
    query.begin = begin;
    return query;
  });
}

/**
 * Opens a transaction on `runner`'s connection with BEGIN, then `settings` (`SET LOCAL …`, without parameters),
 * then runs `statement`, in one round trip once the connection has parsed `statement`; resolves with its rows.
 * For work that opens a transaction of its own on a query runner, as the outbox relay's claim does; the caller
 * commits or rolls back. A connection that is not node-postgres' gets the statements one after the other.
 */
export async function beginOn<T>(
  runner: QueryRunner,
  settings: readonly string[],
  statement: PreparedStatement,
): Promise<T[]> {
  const client = (await runner.connect()) as unknown;
  const postgres = isPgClient(client) ? driverModule(dataSourceOf(runner)) : undefined;
  if (!postgres || !isPgClient(client)) {
    for (const text of ['BEGIN', ...settings]) await runner.query(text);
    return runner.query(statement.text, statement.values) as Promise<T[]>;
  }
  return (await beginThen(postgres, client, ['BEGIN', ...settings], statement)).rows as T[];
}

/** Sends `statement` and COMMIT, in one round trip once the connection has parsed `statement` (in two before). */
async function thenCommit(
  postgres: typeof pg,
  client: PoolClient,
  statement: PreparedStatement,
): Promise<void> {
  if (!hasParsed(client, statement.name)) {
    await client.query(statement);
    await client.query('COMMIT');
    return;
  }
  const QueryThenCommit = pipelinedQuery(postgres, 'thenCommit');
  await submit(client, (callback) => new QueryThenCommit(statement, undefined, callback));
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
 * Builds, as its transaction commits, the statement to send in the COMMIT's round trip; undefined for none. It
 * may run statements of its own in the transaction first.
 */
export type CommitTail = () => Promise<PreparedStatement | undefined>;

/** The transactions runTransactionStartingWith has open, by query runner, with the tail set for their commit. */
const commitTails = new WeakMap<QueryRunner, { tail?: CommitTail }>();

/**
 * Whether `manager` is at the top level of a transaction of runTransactionStartingWith (no savepoint open), which
 * sends the statement of a tail given to `sendWithCommit()` in the round trip of its COMMIT.
 */
export function sendsWithCommit(manager: EntityManager): boolean {
  const runner = manager.queryRunner;
  return (
    runner !== undefined &&
    commitTails.has(runner) &&
    (runner as unknown as RunnerState).transactionDepth === 1
  );
}

/**
 * Sets the tail that builds the statement `manager`'s transaction sends with its COMMIT, replacing any set before;
 * `sendsWithCommit(manager)` must hold. The statement runs after the DataSource's `beforeTransactionCommit`
 * subscribers; a failure of it rolls the transaction back, as a failed COMMIT does.
 */
export function sendWithCommit(manager: EntityManager, tail: CommitTail): void {
  const open = manager.queryRunner && commitTails.get(manager.queryRunner);
  if (!open || !sendsWithCommit(manager)) throw new Error('this transaction sends nothing with its COMMIT');
  open.tail = tail;
}

/**
 * Runs `work` in a new transaction on `dataSource` that begins with `first`, sent with BEGIN in one round trip;
 * `work` gets the transaction's EntityManager and the number of rows `first` affected. Commits when `work`
 * resolves, rolls back when it or the commit fails, and releases the connection either way.
 *
 * This is what `dataSource.transaction()` does, with one round trip fewer per transaction (two with a tail given to
 * `sendWithCommit()`, which travels with the COMMIT) and without TypeORM's
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
    const open: { tail?: CommitTail } = {};
    let result: T;
    try {
      await broadcast(runner, 'BeforeTransactionStart');
      const affected = (await beginThen(postgres, client, [beginStatement(dataSource)], first)).rowCount ?? 0;
      state.transactionDepth = 1;
      commitTails.set(runner, open);
      await broadcast(runner, 'AfterTransactionStart');
      result = await work(runner.manager, affected);
      await broadcast(runner, 'BeforeTransactionCommit');
      const last = await open.tail?.();
      if (last) await thenCommit(postgres, client, last);
      else await client.query('COMMIT');
    } catch (error) {
      commitTails.delete(runner);
      await rollBack(runner, client);
      throw error;
    }
    commitTails.delete(runner);
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

/** Each transaction event TypeORM broadcasts, with the subscriber method that receives it. */
const HOOKS = {
  BeforeTransactionStart: 'beforeTransactionStart',
  AfterTransactionStart: 'afterTransactionStart',
  BeforeTransactionCommit: 'beforeTransactionCommit',
  AfterTransactionCommit: 'afterTransactionCommit',
  BeforeTransactionRollback: 'beforeTransactionRollback',
  AfterTransactionRollback: 'afterTransactionRollback',
} as const;

type TransactionEvent = keyof typeof HOOKS;

/**
 * Sends a transaction event to the DataSource's subscribers, as TypeORM's own transaction methods do: each
 * subscriber with the event's method gets it, and the promises they return are awaited together.
 *
 * NOTE: called here rather than through the runner's `broadcaster`, which makes a result object and awaits a
 * Promise.all per event even when every subscriber returns nothing: that cost about 9 µs of CPU per message in
 * the transactional benchmark's profile, for the three or four events of each transaction.
 */
async function broadcast(runner: QueryRunner, event: TransactionEvent): Promise<void> {
  const hook = HOOKS[event];
  const dataSource = dataSourceOf(runner);
  let pending: unknown[] | undefined;
  for (const subscriber of dataSource.subscribers as unknown as Array<Record<string, unknown>>) {
    const method = subscriber[hook];
    if (typeof method !== 'function') continue;
    const result: unknown = method.call(subscriber, {
      dataSource,
      connection: dataSource,
      queryRunner: runner,
      manager: runner.manager,
    });
    if (result instanceof Promise) (pending ??= []).push(result);
  }
  if (pending) await Promise.all(pending);
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
