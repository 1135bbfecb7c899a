import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { DataSource, type QueryRunner } from 'typeorm';
import type { TransactionContext } from '../database/transaction-context.service';
import { IdempotencyKeyInFlightError } from '../errors/idempotency-key-in-flight.error';
import { IdempotencyKeyPruner } from './idempotency-key-pruner.service';
import { IdempotencyStore, type IdempotentRequest, type KeyClaim } from './idempotency-store.service';
import { resolveIdempotencyOptions } from './idempotency.options';
import { storedCaller } from './caller-identity';
import {
  RELIABLE_MESSAGING_ENTITIES,
  RELIABLE_MESSAGING_MIGRATIONS,
  ScopeIdempotencyKeysByCaller1767225600026,
} from '../typeorm';
import { createMessagingDatabase, type MessagingDatabase } from '../../../../test/support/messaging-database';
import { createTestDatabase } from '../../../../test/support/test-database';
import { waitFor } from '../../../../test/support/wait-for';

/**
 * IdempotencyStore and its pruner against the real PostgreSQL: how a claim on a key behaves beside another
 * transaction holding the same key, after a commit, a rollback and expiry.
 */
describe('idempotency keys in rm_idempotency_keys', () => {
  let db: MessagingDatabase;
  let store: IdempotencyStore;
  const options = resolveIdempotencyOptions({ lockTimeoutMs: 300 });

  const request = (overrides: Partial<IdempotentRequest> = {}): IdempotentRequest => ({
    scope: 'OrdersController.place',
    caller: storedCaller('principal:client-a'),
    key: randomUUID(),
    method: 'POST',
    path: '/orders',
    fingerprint: 'a'.repeat(64),
    ...overrides,
  });

  async function begin(): Promise<QueryRunner> {
    const runner = db.dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    return runner;
  }

  async function end(runner: QueryRunner, outcome: 'commit' | 'rollback'): Promise<void> {
    if (outcome === 'commit') await runner.commitTransaction();
    else await runner.rollbackTransaction();
    await runner.release();
  }

  /** Resolves once a claim waits on the lock of a key another transaction holds. */
  async function claimWaiting(): Promise<void> {
    await waitFor('a claim waiting on the key', async () => {
      const rows = await db.dataSource.query<unknown[]>(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' ` +
          `AND query LIKE 'INSERT INTO "rm_idempotency_keys"%'`,
      );
      return rows.length === 1;
    });
  }

  /** Claims and completes `key` with `body` in a committed transaction, as a request that succeeded. */
  async function handled(idempotent: IdempotentRequest, body: unknown): Promise<void> {
    const runner = await begin();
    expect(await store.claim(runner.manager, idempotent)).toEqual({ outcome: 'claimed' });
    await store.complete(runner.manager, idempotent, 201, body);
    await end(runner, 'commit');
  }

  beforeAll(async () => {
    db = await createMessagingDatabase();
    const transactions = { dataSource: db.dataSource } as unknown as TransactionContext;
    store = new IdempotencyStore(options, transactions);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('replays the stored status and body to a claim after the commit', async () => {
    const idempotent = request();
    await handled(idempotent, { id: 'order-1', items: [{ sku: 'A' }] });

    const again = await db.dataSource.transaction((manager) => store.claim(manager, idempotent));

    expect(again).toEqual({ outcome: 'replay', status: 201, body: { id: 'order-1', items: [{ sku: 'A' }] } });
  });

  it('answers mismatch, naming the first request, to a claim with another fingerprint', async () => {
    const idempotent = request();
    await handled(idempotent, { id: 'order-2' });

    const other = await db.dataSource.transaction((manager) =>
      store.claim(manager, { ...idempotent, fingerprint: 'b'.repeat(64) }),
    );

    expect(other).toEqual({ outcome: 'mismatch', storedMethod: 'POST', storedPath: '/orders' });
  });

  it("claims another caller's key as a new one: no replay of the first caller's response, no mismatch", async () => {
    const first = request();
    await handled(first, { id: 'order-of-a' });

    const sameBody = await db.dataSource.transaction(async (manager) => {
      const claim = await store.claim(manager, { ...first, caller: storedCaller('principal:client-b') });
      await store.complete(manager, { ...first, caller: storedCaller('principal:client-b') }, 201, {
        id: 'order-of-b',
      });
      return claim;
    });
    const otherBody = await db.dataSource.transaction((manager) =>
      store.claim(manager, {
        ...first,
        caller: storedCaller('principal:client-c'),
        fingerprint: 'b'.repeat(64),
      }),
    );
    const firstAgain = await db.dataSource.transaction((manager) => store.claim(manager, first));

    expect(sameBody).toEqual({ outcome: 'claimed' });
    expect(otherBody).toEqual({ outcome: 'claimed' });
    expect(firstAgain).toEqual({ outcome: 'replay', status: 201, body: { id: 'order-of-a' } });
  });

  it('makes a claim wait for the transaction holding the key, then replay what it committed', async () => {
    const idempotent = request();
    const first = await begin();
    await store.claim(first.manager, idempotent);
    let second: KeyClaim | undefined;
    const waiting = db.dataSource
      .transaction((manager) => store.claim(manager, idempotent))
      .then((claim) => (second = claim));
    await claimWaiting();

    expect(second).toBeUndefined();
    await store.complete(first.manager, idempotent, 201, { id: 'order-3' });
    await end(first, 'commit');
    await waiting;
    expect(second).toEqual({ outcome: 'replay', status: 201, body: { id: 'order-3' } });
  });

  it('gives the key to a waiting claim when the transaction holding it rolls back (a failed request)', async () => {
    const idempotent = request();
    const first = await begin();
    await store.claim(first.manager, idempotent);
    const second = await begin();
    const waiting = store.claim(second.manager, idempotent);
    await claimWaiting();

    await end(first, 'rollback');

    expect(await waiting).toEqual({ outcome: 'claimed' });
    await end(second, 'rollback');
  });

  it('throws IdempotencyKeyInFlightError after lockTimeoutMs behind a transaction that holds the key', async () => {
    const idempotent = request();
    const first = await begin();
    await store.claim(first.manager, idempotent);

    const late = db.dataSource.transaction((manager) => store.claim(manager, idempotent));

    await expect(late).rejects.toBeInstanceOf(IdempotencyKeyInFlightError);
    await end(first, 'rollback');
  });

  it("sets lock_timeout for the claim only, and puts the transaction's own value back", async () => {
    const runner = await begin();
    await runner.query(`SET LOCAL lock_timeout = '7s'`);

    await store.claim(runner.manager, request());

    expect(await runner.query(`SHOW lock_timeout`)).toEqual([{ lock_timeout: '7s' }]);
    await end(runner, 'rollback');
  });

  it('takes over an expired key as a new one, and the pruner deletes expired keys in batches', async () => {
    const expired = request();
    await handled(expired, { id: 'old' });
    const live = request();
    await handled(live, { id: 'live' });
    await db.dataSource.query(
      `INSERT INTO rm_idempotency_keys (scope, caller, idempotency_key, request_method, request_path, fingerprint,
         response_status, expires_at)
       SELECT 'bulk', 'anonymous', 'k-' || n, 'POST', '/orders', 'f', 201, now() - interval '1 second'
         FROM generate_series(1, 2500) AS n`,
    );
    await db.dataSource.query(
      `UPDATE rm_idempotency_keys SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`,
      [expired.key],
    );

    const retaken = await db.dataSource.transaction(async (manager) => {
      const claim = await store.claim(manager, { ...expired, fingerprint: 'c'.repeat(64) });
      await store.complete(manager, expired, 201, { id: 'new' });
      return claim;
    });
    const pruned = await new IdempotencyKeyPruner(options, store).pruneNow();

    expect(retaken).toEqual({ outcome: 'claimed' });
    expect(pruned).toBe(2500);
    const left = await db.dataSource.query<Array<{ idempotency_key: string }>>(
      `SELECT idempotency_key FROM rm_idempotency_keys WHERE idempotency_key = ANY($1) ORDER BY 1`,
      [[expired.key, live.key]],
    );
    expect(left.map((row) => row.idempotency_key).sort()).toEqual([expired.key, live.key].sort());
  });

  describe('schema', () => {
    it('migrates rm_idempotency_keys to exactly what IdempotencyKeyEntity describes', async () => {
      const pending = await db.dataSource.driver.createSchemaBuilder().log();

      expect(
        pending.upQueries.map((query) => query.query).filter((sql) => /rm_idempotency_keys/.test(sql)),
      ).toEqual([]);
    });

    it('gives keys stored before the caller column to the anonymous caller, and reverts to one key per scope', async () => {
      const database = await createTestDatabase();
      const before = RELIABLE_MESSAGING_MIGRATIONS.filter(
        (migration) => migration !== ScopeIdempotencyKeysByCaller1767225600026,
      );
      const open = (migrations: typeof RELIABLE_MESSAGING_MIGRATIONS) =>
        new DataSource({
          type: 'postgres',
          url: database.url,
          entities: RELIABLE_MESSAGING_ENTITIES,
          migrations,
          migrationsRun: true,
          logging: false,
        }).initialize();
      try {
        const old = await open(before);
        await old.query(
          `INSERT INTO rm_idempotency_keys (scope, idempotency_key, request_method, request_path, fingerprint,
             response_status, expires_at) VALUES ('s', 'k-old', 'POST', '/orders', 'f', 201, now() + interval '1 day')`,
        );
        await old.destroy();
        const upgraded = await open(RELIABLE_MESSAGING_MIGRATIONS);
        const rows = await upgraded.query<Array<{ caller: string }>>(
          `SELECT caller FROM rm_idempotency_keys WHERE idempotency_key = 'k-old'`,
        );
        await upgraded.query(
          `INSERT INTO rm_idempotency_keys (scope, caller, idempotency_key, request_method, request_path,
             fingerprint, expires_at) VALUES ('s', $1, 'k-old', 'POST', '/orders', 'g', now() + interval '1 day')`,
          [storedCaller('principal:client-b')],
        );
        await upgraded.undoLastMigration();
        const reverted = await upgraded.query<Array<{ n: number }>>(
          `SELECT count(*)::int AS n FROM rm_idempotency_keys WHERE idempotency_key = 'k-old'`,
        );
        await upgraded.destroy();

        expect(rows).toEqual([{ caller: 'anonymous' }]);
        expect(reverted).toEqual([{ n: 1 }]);
      } finally {
        await database.drop();
      }
    });
  });
});
