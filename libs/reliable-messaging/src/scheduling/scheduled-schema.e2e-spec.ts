import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMessagingDatabase, type MessagingDatabase } from '../../../../test/support/messaging-database';
import { BACKLOG, EXACT_COUNT_BELOW, PROMOTE } from './scheduled-store.service';
import { PROMOTE_BATCH } from './scheduled-promoter.service';

describe('scheduled messages schema', () => {
  let db: MessagingDatabase;

  beforeAll(async () => {
    db = await createMessagingDatabase();
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('migrates the scheduled messages table to exactly what its entity describes', async () => {
    const pending = await db.dataSource.driver.createSchemaBuilder().log();

    expect(pending.upQueries.map((query) => query.query).filter((sql) => /rm_scheduled/.test(sql))).toEqual(
      [],
    );
  });

  it('finds the due rows by walking the delivery-time index from its start, never the rows not yet due, with or without statistics', async () => {
    // 20,000 rows due in the coming hours and 5 due already.
    await db.dataSource.query(
      `INSERT INTO rm_scheduled (message_id, idempotency_key, exchange, routing_key, properties, body, deliver_at) ` +
        `SELECT gen_random_uuid(), 'key-' || n, 'events', 'plan.check', '{}', '\\x7b7d', ` +
        `now() + CASE WHEN n <= 5 THEN -n ELSE n END * interval '1 second' FROM generate_series(1, 20000) n`,
    );
    const explain = async (): Promise<string> => {
      // In a transaction rolled back after, so the promotion's EXPLAIN ANALYZE moves nothing for good.
      const runner = db.dataSource.createQueryRunner();
      await runner.startTransaction();
      try {
        const rows = (await runner.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${PROMOTE}`, [
          PROMOTE_BATCH,
        ])) as Array<{ 'QUERY PLAN': string }>;
        return rows.map((row) => row['QUERY PLAN']).join('\n');
      } finally {
        await runner.rollbackTransaction();
        await runner.release();
      }
    };

    for (const statistics of ['none', 'analyzed']) {
      if (statistics === 'analyzed') await db.dataSource.query('ANALYZE rm_scheduled');
      const plan = await explain();

      expect({ statistics, plan }).toEqual({
        statistics,
        plan: expect.stringMatching(
          /Index Scan using rm_scheduled_deliver_at_idx on rm_scheduled(?: \S+)? \(actual rows=5 loops=1\)\n\s+Index Cond: \(deliver_at <= now\(\)\)/,
        ),
      });
      expect(plan).not.toMatch(/Seq Scan on rm_scheduled/);
      expect(plan).toMatch(/Insert on rm_outbox \(actual rows=5 loops=1\)/);
    }
  });

  it('reads the backlog without counting the rows, above the exact count threshold, from the table size', async () => {
    await db.dataSource.query('ANALYZE rm_scheduled');
    const rows = await db.dataSource.query<Array<{ 'QUERY PLAN': string }>>(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${BACKLOG}`,
      [0],
    );
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');

    expect(plan).toMatch(/Aggregate \(never executed\)/);
    expect(plan).toMatch(/Index Only Scan using rm_scheduled_deliver_at_idx/);
    expect(EXACT_COUNT_BELOW).toBe(100_000);
  });
});
