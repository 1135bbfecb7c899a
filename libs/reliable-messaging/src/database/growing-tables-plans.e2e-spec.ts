import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DataSource, QueryRunner } from 'typeorm';
import { createMessagingDatabase, type MessagingDatabase } from '../../../../test/support/messaging-database';
import type { Envelope } from '../envelope/envelope';
import { IdempotencyStore } from '../idempotency/idempotency-store.service';
import type { ResolvedIdempotencyOptions } from '../idempotency/idempotency.options';
import type { TransactionContext } from './transaction-context.service';
import { InboxStore } from '../inbox/inbox-store.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { OutboxStore } from '../outbox/outbox-store.service';

/** Rows in each table: enough that a scan of the table costs a thousand times an index probe. */
const ROWS = 200_000;

type Plan = Array<{ 'QUERY PLAN': string }>;
const text = (plan: Plan): string => plan.map((row) => row['QUERY PLAN']).join('\n');

/** The pages a statement touched: hits and reads on the first Buffers line of its plan, the top node's. */
function pagesTouched(plan: string): number {
  const top = /Buffers: (.*)/.exec(plan)?.[1] ?? '';
  return [...top.matchAll(/(?:hit|read)=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/**
 * Plans `sql` as a prepared statement with `values`, once as PostgreSQL plans it for given values (custom) and
 * once for any (generic, what a statement run often is planned as), in a transaction rolled back after.
 */
async function bothPlans(dataSource: DataSource, sql: string, values: readonly unknown[]): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.query('BEGIN');
  try {
    return await plansOn(runner, sql, values);
  } finally {
    await runner.query('ROLLBACK');
    await runner.release();
  }
}

async function plansOn(runner: QueryRunner, sql: string, values: readonly unknown[]): Promise<string[]> {
  const plans: string[] = [];
  await runner.query(`PREPARE growing_plan AS ${sql}`);
  for (const mode of ['force_custom_plan', 'force_generic_plan']) {
    await runner.query(`SET LOCAL plan_cache_mode = ${mode}`);
    const literals = values.map((value) =>
      typeof value === 'number' ? String(value) : `'${String(value)}'`,
    );
    plans.push(text((await runner.query(`EXPLAIN EXECUTE growing_plan(${literals.join(', ')})`)) as Plan));
  }
  await runner.query('DEALLOCATE growing_plan');
  return plans;
}

/** A stand-in DataSource that records the statement a store sends instead of running it. */
function recording(): { dataSource: DataSource; sent: Array<{ sql: string; values: unknown[] }> } {
  const sent: Array<{ sql: string; values: unknown[] }> = [];
  const dataSource = {
    query: async (sql: string, values: unknown[] = []) => {
      sent.push({ sql, values });
      return [[], 0];
    },
  } as unknown as DataSource;
  return { dataSource, sent };
}

/**
 * The statements whose cost could grow with their tables (the dedup insert, the prunes, the relay's claim), planned
 * on tables of ROWS rows with statistics: each must reach its rows through an index, never a scan of the table, so
 * that its cost stays flat as the table grows to millions (the scale suite measures it at 10,000,000 inbox rows and
 * a 1,000,000-row outbox backlog: docs/benchmarks.md).
 */
describe('plans of the statements on growing tables', () => {
  let db: MessagingDatabase;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    // Half of each table past its retention (a pruner that fell behind), spread through the table as pruning and
    // the reuse of freed pages leave it: enough that, asked for any expired rows, PostgreSQL would scan the table.
    await db.dataSource.query(
      `INSERT INTO rm_inbox (consumer, idempotency_key, message_id, message_type, processed_at) ` +
        `SELECT 'orders', gen_random_uuid()::text, gen_random_uuid()::text, 'order.placed', ` +
        `now() - CASE WHEN n % 2 = 0 THEN interval '30 days' ELSE interval '1 hour' END FROM generate_series(1, $1) n`,
      [ROWS],
    );
    await db.dataSource.query(
      `INSERT INTO rm_outbox (message_id, exchange, routing_key, properties, body, ordering_key, status, published_at) ` +
        `SELECT gen_random_uuid(), 'events', 'order.placed', '{}', '\\x7b7d', 'key-' || (n % 100), ` +
        `CASE WHEN n <= $1 / 2 THEN 'published' ELSE 'pending' END, ` +
        `CASE WHEN n <= $1 / 2 THEN now() - interval '2 hours' END ` +
        `FROM generate_series(1, $1) n`,
      [ROWS],
    );
    await db.dataSource.query(
      `INSERT INTO rm_idempotency_keys (scope, caller, idempotency_key, request_method, request_path, fingerprint, expires_at) ` +
        `SELECT 'orders', 'caller', gen_random_uuid()::text, 'POST', '/orders', 'f', ` +
        `now() + CASE WHEN n % 2 = 0 THEN -interval '1 hour' ELSE interval '1 day' END FROM generate_series(1, $1) n`,
      [ROWS],
    );
    await db.dataSource.query('ANALYZE rm_idempotency_keys');
    await db.dataSource.query('ANALYZE rm_inbox');
    await db.dataSource.query('ANALYZE rm_outbox');
  }, 120_000);

  afterAll(async () => {
    await db?.drop();
  });

  it('deduplicates with one probe of the inbox primary key, for a new message and for a duplicate', async () => {
    const store = new InboxStore({ dataSource: db.dataSource } as ResolvedMessagingOptions);
    const [existing] = await db.dataSource.query<Array<{ idempotency_key: string }>>(
      `SELECT idempotency_key FROM rm_inbox LIMIT 1`,
    );
    const envelope = (key: string): Envelope =>
      ({ idempotencyKey: key, messageId: 'm-1', type: 'order.placed' }) as Envelope;
    for (const [key, outcome] of [
      ['a-key-never-seen', /Tuples Inserted: 1/],
      [existing.idempotency_key, /Conflicting Tuples: 1/],
    ] as const) {
      const { text: sql, values } = store.recordStatement('orders', envelope(key));
      const runner = db.dataSource.createQueryRunner();
      await runner.query('BEGIN');
      try {
        const plan = text((await runner.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, values)) as Plan);
        expect(plan).toMatch(outcome);
        // A probe of a B-tree over 200,000 keys reads a handful of pages; a scan would read thousands.
        expect({ plan, pages: pagesTouched(plan) < 30 }).toEqual({ plan, pages: true });
      } finally {
        await runner.query('ROLLBACK');
        await runner.release();
      }
    }
  });

  it('prunes the inbox, the published outbox rows and the idempotency keys oldest first from their time index, never scanning the table', async () => {
    const inbox = recording();
    await new InboxStore({ dataSource: inbox.dataSource } as ResolvedMessagingOptions).prune(
      86_400_000,
      1000,
    );
    const outbox = recording();
    await new OutboxStore({ dataSource: outbox.dataSource } as ResolvedMessagingOptions).prunePublished(
      3_600_000,
      1000,
    );
    const keys = recording();
    await new IdempotencyStore(
      {} as ResolvedIdempotencyOptions,
      {
        dataSource: keys.dataSource,
      } as TransactionContext,
    ).prune(1000);
    const cases = [
      {
        sent: inbox.sent[0],
        index: /Index Scan using rm_inbox_processed_at_idx/,
        table: /Seq Scan on rm_inbox/,
      },
      {
        sent: outbox.sent[0],
        index: /Index Scan using rm_outbox_published_at_idx/,
        table: /Seq Scan on rm_outbox/,
      },
      {
        sent: keys.sent[0],
        index: /Index Scan using rm_idempotency_keys_expires_at_idx/,
        table: /Seq Scan on rm_idempotency_keys/,
      },
    ];
    for (const { sent, index, table } of cases) {
      for (const plan of await bothPlans(db.dataSource, sent.sql, sent.values)) {
        expect(plan).toMatch(index);
        expect(plan).not.toMatch(table);
      }
    }
  });

  it("claims a batch of a 100,000-row backlog by walking the pending rows' index in id order", async () => {
    const plans: string[] = [];
    const runner = db.dataSource.createQueryRunner();
    // The relay's store runs its claim on a stand-in runner that plans the claim instead of running it.
    const explaining = {
      connect: async () => ({}),
      query: async (sql: string, parameters?: unknown[]) => {
        if (!sql.includes('WITH retrying')) return runner.query(sql, parameters) as Promise<unknown>;
        plans.push(...(await plansOn(runner, sql, parameters ?? [])));
        return [];
      },
    } as unknown as QueryRunner;
    const store = new OutboxStore({ dataSource: db.dataSource } as ResolvedMessagingOptions);
    try {
      await store.claim(explaining, 200, { index: 0, of: 2 });
    } finally {
      await store.rollback(explaining);
      await runner.release();
    }
    expect(plans).toHaveLength(2);
    for (const plan of plans) {
      expect(plan).toMatch(
        /Limit[\s\S]*LockRows[\s\S]*Index Scan using rm_outbox_pending_idx on rm_outbox o/,
      );
      expect(plan).not.toMatch(/Sort|Seq Scan on rm_outbox/);
    }
  });
});
