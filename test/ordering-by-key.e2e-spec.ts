import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { closeConnectionsNamed } from './support/messaging-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import {
  FIXTURE_HANDLED_TABLE_SQL,
  handledCount,
  handledSteps,
  orderReport,
  publishSteps,
  type HandledStep,
  type OrderReport,
} from './support/ordering-load';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/ordering-app.js`;
const KEYS = Array.from({ length: 16 }, (_, i) => `account-${String(i).padStart(2, '0')}`);
/**
 * Messages per key: 400 in `npm test` (6,400 in all, a failover a third of the way), as docs/ordering.md states;
 * `ORDERING_PER_KEY=1000` runs the load it measured.
 */
const PER_KEY = Number(process.env.ORDERING_PER_KEY ?? 400);
/** The unordered baseline only has to show reordering, which a quarter of the load shows many times over. */
const BASELINE_PER_KEY = Math.max(50, Math.round(PER_KEY / 4));
const INSTANCES = 3;
const PARTITIONS = 8;
/** Each handler takes a random 0 to 2 ms on top of its inbox transaction. */
const WORK_MS = 2;

interface Run {
  steps: HandledStep[];
  report: OrderReport;
  /** Messages per second from the first handler's start to the last one's end. */
  throughput: number;
}

/**
 * Ordering by key across three replicas of the fixture app: 16 keys × PER_KEY steps published interleaved, each
 * step a row written in its handler's inbox transaction. Ordered by key, every key's steps are handled in
 * publish order while different keys are handled at the same time, also when the replica holding the most
 * partitions loses its connection mid-run and the others take its partitions over. Part of the load
 * without ordering is the baseline: it shows the check does catch reordering, and what ordering costs.
 */
describe('ordering by key: 16 keys over 3 app instances', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let exchange: string;

  beforeAll(async () => {
    db = await createMessagingDatabase([FIXTURE_HANDLED_TABLE_SQL]);
    broker = await TestBroker.connect();
    exchange = broker.name('events');
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  async function run(queue: string, ordering: string, perKey: number, failover: boolean): Promise<Run> {
    const total = KEYS.length * perKey;
    const connectionName = (i: number): string => `${broker.prefix}.${ordering.replace(':', '')}-${i}`;
    const apps = Array.from({ length: INSTANCES }, (_, i) =>
      ChildApp.start(FIXTURE, {
        env: {
          FIXTURE_QUEUE: queue,
          FIXTURE_ORDERING: ordering,
          FIXTURE_EXCHANGE: exchange,
          FIXTURE_CONNECTION_NAME: connectionName(i),
          FIXTURE_INSTANCE: `instance-${i}`,
          FIXTURE_WORK_MS: String(WORK_MS),
          DATABASE_URL: db.database.url,
        },
      }),
    );
    await Promise.all(apps.map((app) => app.waitForLine(/^fixture ready/)));
    await publishSteps(broker, exchange, KEYS, perKey);
    if (failover) {
      await waitFor(
        'a third of the steps handled',
        async () => (await handledCount(db.dataSource, queue)) >= total / 3,
        {
          timeoutMs: 120_000,
          intervalMs: 100,
        },
      );
      const busiest = busiestInstance(await handledSteps(db.dataSource, queue));
      // Both of its connections, consumer and publisher.
      expect(await closeConnectionsNamed(connectionName(Number(busiest.replace('instance-', ''))))).toBe(2);
    }
    let handled = 0;
    await waitFor(
      () => `${total} steps handled (${handled} so far)`,
      async () => (handled = await handledCount(db.dataSource, queue)) >= total,
      { timeoutMs: 180_000, intervalMs: 200 },
    );
    await Promise.all(apps.map((app) => app.stop('SIGTERM')));
    const steps = await handledSteps(db.dataSource, queue);
    const report = orderReport(steps, KEYS, perKey);
    return { steps, report, throughput: Math.round((total / report.spanMs) * 1000) };
  }

  let ordered: Run;

  it('handles every key in publish order and different keys in parallel, also across a failover', async () => {
    const queue = broker.name('keyed');
    ordered = await run(queue, `key:${PARTITIONS}`, PER_KEY, true);

    expect(ordered.report).toMatchObject({ violations: 0, duplicates: 0, missing: 0 });
    expect(ordered.report.maxKeysInParallel).toBeGreaterThan(1);
    // Every key stays on one partition, and the partitions were handled by more than one replica.
    for (const key of KEYS) {
      expect(new Set(ordered.steps.filter((s) => s.key === key).map((s) => s.queue)).size).toBe(1);
    }
    expect(new Set(ordered.steps.map((s) => s.instance)).size).toBeGreaterThan(1);
    expect(new Set(ordered.steps.map((s) => s.queue)).size).toBeGreaterThan(1);
  }, 300_000);

  it('baseline: part of the load without ordering is handled out of order, so the check above can fail', async () => {
    const queue = broker.name('unordered');
    const unordered = await run(queue, 'none', BASELINE_PER_KEY, false);

    expect(unordered.report).toMatchObject({ duplicates: 0, missing: 0 });
    expect(unordered.report.violations).toBeGreaterThan(0);
    console.log(
      `ordering by key (${PARTITIONS} partitions, one failover): ${ordered?.throughput ?? '?'} msg/s, ` +
        `${ordered?.report.maxKeysInParallel ?? '?'} keys at once; ` +
        `no ordering (concurrency 10 × ${INSTANCES}): ${unordered.throughput} msg/s, ` +
        `${unordered.report.violations} of ${KEYS.length * BASELINE_PER_KEY} steps out of order`,
    );
  }, 300_000);
});

function busiestInstance(steps: readonly HandledStep[]): string {
  const counts = new Map<string, number>();
  for (const step of steps) counts.set(step.instance, (counts.get(step.instance) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
}
