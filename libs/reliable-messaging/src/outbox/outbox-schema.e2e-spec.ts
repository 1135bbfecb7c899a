import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource, type QueryRunner } from 'typeorm';
import { RELIABLE_MESSAGING_ENTITIES, RELIABLE_MESSAGING_MIGRATIONS } from '../typeorm';
import { OutboxStore, type ClaimedRow } from './outbox-store.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { createMessagingDatabase, type MessagingDatabase } from '../../../../test/support/messaging-database';
import { createTestDatabase } from '../../../../test/support/test-database';
import { MessagingTestApp } from '../../../../test/support/messaging-app';
import { TestBroker } from '../../../../test/support/test-broker';

describe('outbox and inbox schema', () => {
  let db: MessagingDatabase;

  beforeAll(async () => {
    db = await createMessagingDatabase();
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('migrates the outbox and inbox tables to exactly what their entities describe', async () => {
    const pending = await db.dataSource.driver.createSchemaBuilder().log();

    expect(
      pending.upQueries.map((query) => query.query).filter((sql) => /rm_outbox|rm_inbox/.test(sql)),
    ).toEqual([]);
  });

  it('claims by walking the pending index in id order, never sorting every pending row, with or without statistics', async () => {
    await db.dataSource.query(
      `INSERT INTO rm_outbox (message_id, exchange, routing_key, properties, body, ordering_key) ` +
        `SELECT gen_random_uuid(), 'events', 'plan.check', '{}', '\\x7b7d', CASE WHEN n % 3 = 0 THEN NULL ELSE 'key-' || (n % 50) END ` +
        `FROM generate_series(1, 5000) n`,
    );
    await db.dataSource.query(
      `UPDATE rm_outbox SET status = 'published', published_at = now() WHERE id % 4 = 0`,
    );
    // A few rows waiting out a retry and a few parked, each holding back the later rows of its key.
    await db.dataSource.query(
      `UPDATE rm_outbox SET attempts = 1, available_at = now() + interval '1 hour' WHERE id IN (7, 301, 302)`,
    );
    await db.dataSource.query(
      `UPDATE rm_outbox SET status = 'parked', parked_at = now() WHERE id IN (11, 403)`,
    );
    const plans: string[] = [];
    const heldBackPlans: string[] = [];
    const store = new OutboxStore({ dataSource: db.dataSource } as ResolvedMessagingOptions);
    /**
     * Opens the claim's transaction as the relay does, then EXPLAINs the claim and the re-check instead of running
     * them. The claim is a prepared statement, which PostgreSQL plans with its parameters for its first runs and
     * may then plan once for any (a generic plan): both plans are checked.
     */
    const explainClaim = async (): Promise<void> => {
      const runner = db.dataSource.createQueryRunner();
      const explaining = {
        // Not node-postgres' client: the claim then goes through query() below, after BEGIN and its settings.
        connect: async () => ({}),
        query: async (sql: string, parameters?: unknown[]) => {
          if (sql.includes('WITH retrying')) {
            await runner.query(`PREPARE plan_check AS ${sql}`);
            for (const mode of ['force_custom_plan', 'force_generic_plan']) {
              await runner.query(`SET LOCAL plan_cache_mode = ${mode}`);
              const values = (parameters ?? []).map(Number).join(', ');
              const rows = (await runner.query(`EXPLAIN EXECUTE plan_check(${values})`)) as Array<{
                'QUERY PLAN': string;
              }>;
              plans.push(rows.map((row) => row['QUERY PLAN']).join('\n'));
            }
            await runner.query('DEALLOCATE plan_check');
            return [];
          }
          if (!sql.startsWith('SELECT k.key')) return runner.query(sql, parameters) as Promise<unknown>;
          const rows = (await runner.query(`EXPLAIN ${sql}`, parameters)) as Array<{ 'QUERY PLAN': string }>;
          heldBackPlans.push(rows.map((row) => row['QUERY PLAN']).join('\n'));
          return [];
        },
      } as unknown as QueryRunner;
      try {
        await store.claim(explaining, 200);
        // A row whose key's chain is broken (a pending row of its key before it, outside the claim).
        await store.heldBack(explaining, [
          {
            id: '12',
            orderingKey: 'key-12',
            attempts: 0,
            previousId: '2',
            message: {} as ClaimedRow['message'],
          },
        ]);
      } finally {
        await store.rollback(explaining);
        await runner.release();
      }
    };

    await explainClaim();
    await db.dataSource.query('ANALYZE rm_outbox');
    await explainClaim();

    expect(plans).toHaveLength(4);
    for (const plan of plans) {
      expect(plan).toMatch(
        /Limit[\s\S]*LockRows[\s\S]*Index Scan using rm_outbox_pending_idx on rm_outbox o/,
      );
      expect(plan).not.toMatch(/Sort/);
      // The rows that hold their keys back come from their own partial indexes, never a scan of the table.
      expect(plan).toMatch(/rm_outbox_retrying_idx/);
      expect(plan).toMatch(/rm_outbox_parked_idx/);
      // Each claimed row's previous pending row of its key: one probe of the pending rows' key index.
      expect(plan).toMatch(/Index Only Scan Backward using rm_outbox_pending_key_idx on rm_outbox e/);
      expect(plan).not.toMatch(/Seq Scan on rm_outbox/);
    }
    expect(heldBackPlans).toHaveLength(2);
    for (const plan of heldBackPlans) {
      expect(plan).toMatch(/rm_outbox_pending_key_idx/);
      expect(plan).not.toMatch(/Seq Scan on rm_outbox/);
    }
  });

  it('reverts its migrations', async () => {
    const other = await createMessagingDatabase();
    try {
      for (const _ of RELIABLE_MESSAGING_MIGRATIONS) await other.dataSource.undoLastMigration();
      expect(
        await other.dataSource.query(`SELECT to_regclass('rm_outbox') AS o, to_regclass('rm_inbox') AS i`),
      ).toEqual([{ o: null, i: null }]);
    } finally {
      await other.drop();
    }
  });
});

describe('startup without the tables', () => {
  it('fails with a message naming the migrations to add', async () => {
    const database = await createTestDatabase();
    const dataSource = new DataSource({
      type: 'postgres',
      url: database.url,
      entities: [...RELIABLE_MESSAGING_ENTITIES],
    });
    await dataSource.initialize();
    const broker = await TestBroker.connect();
    try {
      const { error } = await MessagingTestApp.startFailing(broker, { options: { dataSource } });

      expect(String(error)).toMatch(
        /table\(s\) rm_outbox, rm_inbox, rm_scheduled missing from the database; add RELIABLE_MESSAGING_MIGRATIONS to the DataSource migrations with migrationsRun: true/,
      );
    } finally {
      await dataSource.destroy();
      await broker.deleteByPrefix();
      await broker.close();
      await database.drop();
    }
  });
});
