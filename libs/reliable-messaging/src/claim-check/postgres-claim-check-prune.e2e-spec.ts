import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { createMessagingDatabase, type MessagingDatabase } from '../../../../test/support/messaging-database';
import { PRUNE_BATCH_SIZE } from '../database/batched-pruner';
import { PostgresClaimCheckStore } from './postgres-claim-check.store';

/** Expired bodies, a third of them referred to by dead letters; and bodies not yet expired. */
const EXPIRED = 3 * PRUNE_BATCH_SIZE;
const LIVE = 500;

/** A DataSource whose queries are counted: how many ids each statement sent to PostgreSQL in its parameters. */
function counting(dataSource: DataSource): { dataSource: DataSource; idsSent: number[] } {
  const idsSent: number[] = [];
  const counted = new Proxy(dataSource, {
    get(target, property, receiver) {
      if (property !== 'query') return Reflect.get(target, property, receiver) as unknown;
      return (sql: string, values: unknown[] = []) => {
        idsSent.push(
          values.reduce<number>((sum, value) => sum + (Array.isArray(value) ? value.length : 0), 0),
        );
        return target.query(sql, values);
      };
    },
  });
  return { dataSource: counted, idsSent };
}

/**
 * The PostgreSQL store's prune of expired bodies, with a third of them kept for dead letters: it deletes exactly
 * the others, and a batch's statements carry the ids it deletes, never the round's kept ids (every batch once
 * sent all of them, to be parsed, planned and hashed again: 3 to 4 times the CPU of the delete at 10,000 kept,
 * the scale suite's claim-check case). Ten bodies share each expiry, to the microsecond, so the batches resume
 * in (expiry, id) order.
 */
describe('the PostgreSQL claim-check store pruning expired bodies some dead letters still refer to', () => {
  let db: MessagingDatabase;
  let kept: Set<string>;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    const rows = await db.dataSource.query<Array<{ id: string }>>(
      `INSERT INTO rm_claim_check (id, body, message_type, expires_at) ` +
        `SELECT gen_random_uuid(), '\\x7b7d', 'spec.expired', ` +
        `now() - interval '1 day' + (n / 10) * interval '1.000001 second' FROM generate_series(1, $1) n RETURNING id`,
      [EXPIRED],
    );
    kept = new Set(rows.filter((_, index) => index % 3 === 0).map((row) => row.id));
    await db.dataSource.query(
      `INSERT INTO rm_claim_check (id, body, message_type, expires_at) ` +
        `SELECT gen_random_uuid(), '\\x7b7d', 'spec.live', now() + interval '1 day' FROM generate_series(1, $1)`,
      [LIVE],
    );
  });

  afterAll(async () => {
    await db?.drop();
  });

  const stored = async (ids: Iterable<string>): Promise<number> =>
    Number(
      (
        await db.dataSource.query<Array<{ n: string }>>(
          `SELECT count(*) AS n FROM rm_claim_check WHERE id = ANY($1::uuid[])`,
          [[...ids]],
        )
      )[0].n,
    );

  /** One round as the pruner runs it: batches with the round's keep set until one comes back short. */
  const round = async (store: PostgresClaimCheckStore, keep: ReadonlySet<string>): Promise<number[]> => {
    const batches: number[] = [];
    for (;;) {
      batches.push(await store.deleteExpired(PRUNE_BATCH_SIZE, new Date(), keep));
      if (batches[batches.length - 1] < PRUNE_BATCH_SIZE) return batches;
    }
  };

  it('deletes every expired body but the kept ones, sending PostgreSQL only the ids it deletes', async () => {
    const { dataSource, idsSent } = counting(db.dataSource);

    const batches = await round(new PostgresClaimCheckStore(dataSource), kept);

    expect(batches).toEqual([1000, 1000, 0]);
    expect(await stored(kept)).toBe(kept.size);
    const [{ expired, live }] = await db.dataSource.query<Array<{ expired: string; live: string }>>(
      `SELECT count(*) FILTER (WHERE message_type = 'spec.expired') AS expired, ` +
        `count(*) FILTER (WHERE message_type = 'spec.live') AS live FROM rm_claim_check`,
    );
    expect({ expired: Number(expired), live: Number(live) }).toEqual({ expired: kept.size, live: LIVE });
    // The deleted bodies' ids, each once; without the change, every batch sent the 1,000 kept ids besides.
    expect(idsSent.reduce((sum, n) => sum + n, 0)).toBe(EXPIRED - kept.size);
  });

  it('starts each round afresh: a body kept last round goes once no dead letter refers to it', async () => {
    const store = new PostgresClaimCheckStore(db.dataSource);
    const released = [...kept].slice(0, 100);
    const stillKept = new Set([...kept].slice(100));

    expect(await round(store, kept)).toEqual([0]);
    expect(await round(store, stillKept)).toEqual([100]);

    expect(await stored(released)).toBe(0);
    expect(await stored(stillKept)).toBe(stillKept.size);
  });
});
