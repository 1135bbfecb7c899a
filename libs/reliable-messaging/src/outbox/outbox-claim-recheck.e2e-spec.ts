import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { QueryRunner } from 'typeorm';
import { OutboxStore, keysToRecheck } from './outbox-store.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { createMessagingDatabase, type MessagingDatabase } from '../../../../test/support/messaging-database';
import { waitFor } from '../../../../test/support/wait-for';

/** The advisory lock that holds a gated claim after it took its snapshot. */
const GATE = 4242;

/**
 * NOTE: to stop a claim between its snapshot and its first keyed row, the gated session puts a schema of its own
 * ahead of pg_catalog in its search_path, whose `hashtext` (which the claim calls on every keyed row) first waits
 * for a shared advisory lock the test holds, then returns the built-in's value.
 */
const GATE_SQL = [
  'CREATE SCHEMA rm_gate',
  `CREATE FUNCTION rm_gate.hashtext(value text) RETURNS integer LANGUAGE plpgsql AS $$ ` +
    `BEGIN PERFORM pg_advisory_xact_lock_shared(${GATE}); RETURN pg_catalog.hashtext(value); END $$`,
];

/**
 * A relay's claim reads the outbox with a snapshot taken before it gets a key's advisory lock, so it can miss
 * what the key's previous holder committed in between; the re-check with a fresh snapshot must catch it.
 */
describe('outbox claim: a key its previous holder changed after the claim began', () => {
  let db: MessagingDatabase;
  let store: OutboxStore;

  beforeAll(async () => {
    db = await createMessagingDatabase(GATE_SQL);
    store = new OutboxStore({ dataSource: db.dataSource } as ResolvedMessagingOptions);
  });

  afterAll(async () => {
    await db?.drop();
  });

  const insertRows = async (key: string, count: number): Promise<string[]> => {
    const rows = await db.dataSource.query<Array<{ id: string }>>(
      `INSERT INTO rm_outbox (message_id, exchange, routing_key, properties, body, ordering_key) ` +
        `SELECT gen_random_uuid(), 'events', 'recheck', '{}', '\\x7b7d', $1 FROM generate_series(1, $2) ` +
        `RETURNING id`,
      [key, count],
    );
    return rows.map((row) => String(row.id));
  };

  it('holds back the later row of a key whose earlier row was set to wait out a retry after the claim began', async () => {
    const [first, second] = await insertRows('stale', 2);
    const previous = db.dataSource.createQueryRunner();
    const gate = db.dataSource.createQueryRunner();
    const late = db.dataSource.createQueryRunner();
    try {
      // The key's previous holder claims both rows.
      expect((await store.claim(previous, 10)).map((row) => row.id)).toEqual([first, second]);

      // Another claim takes its snapshot, then waits at the gate before it reaches the key.
      await gate.query('SELECT pg_advisory_lock($1)', [GATE]);
      await late.query('SET search_path = rm_gate, pg_catalog, public');
      const [{ pid }] = (await late.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
      const claiming = store.claim(late, 10);
      await waitFor('the late claim to wait at the gate', async () => {
        const waiting = await db.dataSource.query<unknown[]>(
          `SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted`,
          [pid],
        );
        return waiting.length > 0;
      });

      // The previous holder's first row was refused: it waits out a retry; the second was released untouched.
      await store.complete(previous, [
        { id: first, outcome: 'failed', error: 'refused', retryInMs: 3_600_000 },
      ]);
      await gate.query('SELECT pg_advisory_unlock($1)', [GATE]);
      const claimed = await claiming;

      // The late claim got the key's lock, skipped the first row (no longer available) and took the second.
      expect(claimed.map((row) => row.id)).toEqual([second]);
      expect(keysToRecheck(claimed)).toEqual(['stale']);
      expect(await store.heldBack(late, claimed)).toEqual(new Set([second]));
    } finally {
      await store.rollback(previous).catch(() => undefined);
      await store.rollback(late).catch(() => undefined);
      await late.query('RESET search_path').catch(() => undefined);
      for (const runner of [previous, gate, late]) await runner.release();
    }
  });

  it('asks nothing more when every claimed key follows on from its previous pending row', async () => {
    await db.dataSource.query(`DELETE FROM rm_outbox`);
    await insertRows('a', 3);
    await insertRows('b', 2);
    const runner = db.dataSource.createQueryRunner();
    try {
      const claimed = await store.claim(runner, 10);
      expect(claimed).toHaveLength(5);
      const asking = {
        query: () => Promise.reject(new Error('the re-check ran a query')),
      } as unknown as QueryRunner;
      expect(await store.heldBack(asking, claimed)).toEqual(new Set());
    } finally {
      await store.rollback(runner);
      await runner.release();
    }
  });
});
