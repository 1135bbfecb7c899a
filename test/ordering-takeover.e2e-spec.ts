import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { queueCounts } from './support/messaging-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import {
  FIXTURE_HANDLED_TABLE_SQL,
  handledCount,
  handledSteps,
  orderReport,
  publishSteps,
} from './support/ordering-load';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/ordering-app.js`;
const STEPS = 600;
/** The active instance dies right after this step's transaction commits, before its ack reaches the broker. */
const CRASH_AFTER = 200;

/**
 * A single-active-consumer queue (`ordering: 'queue'`) consumed by two replicas of the fixture app. The one
 * that subscribed first is the only one the broker delivers to; it is killed mid-stream at the worst moment,
 * its last step committed but not acknowledged. The standby takes over: the broker redelivers that step, the
 * inbox recognises it as handled, and the stream goes on in order with nothing lost and nothing applied twice.
 */
describe('ordering by queue: the active consumer dies mid-stream and the standby takes over', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;

  beforeAll(async () => {
    db = await createMessagingDatabase([FIXTURE_HANDLED_TABLE_SQL]);
    broker = await TestBroker.connect();
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('goes on in publish order, the redelivered step deduplicated, nothing lost', async () => {
    const exchange = broker.name('events');
    const queue = broker.name('ledger');
    const start = (instance: string, env: Record<string, string> = {}): ChildApp =>
      ChildApp.start(FIXTURE, {
        env: {
          FIXTURE_QUEUE: queue,
          FIXTURE_ORDERING: 'queue',
          FIXTURE_EXCHANGE: exchange,
          FIXTURE_CONNECTION_NAME: `${broker.prefix}.${instance}`,
          FIXTURE_INSTANCE: instance,
          FIXTURE_WORK_MS: '4',
          DATABASE_URL: db.database.url,
          ...env,
        },
      });

    const active = start('active', { FIXTURE_CRASH_AFTER_SEQ: String(CRASH_AFTER) });
    await active.waitForLine(/^fixture ready/);
    const standby = start('standby');
    await standby.waitForLine(/^fixture ready/);
    await waitFor('both replicas subscribed', async () => (await queueCounts(queue)).consumers === 2);

    await publishSteps(broker, exchange, ['ledger'], STEPS);
    const exit = await active.waitForExit(60_000);
    let handled = 0;
    await waitFor(
      () => `${STEPS} steps handled (${handled} so far)`,
      async () => (handled = await handledCount(db.dataSource, queue)) >= STEPS,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await waitFor('the queue to drain', async () => {
      const counts = await queueCounts(queue);
      return counts.ready === 0 && counts.unacked === 0;
    });
    await standby.stop('SIGTERM');

    const steps = await handledSteps(db.dataSource, queue);
    expect(exit.signal).toBe('SIGKILL');
    expect(active.lines).toContain(`crashing after the commit of step ${CRASH_AFTER}`);
    expect(orderReport(steps, ['ledger'], STEPS)).toMatchObject({ violations: 0, duplicates: 0, missing: 0 });
    expect(steps.map((s) => s.seq)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    // The active replica handled everything up to its death, the standby everything after.
    expect(steps.filter((s) => s.instance === 'active').map((s) => s.seq)).toEqual(
      Array.from({ length: CRASH_AFTER }, (_, i) => i + 1),
    );
    // The step that was committed but not acknowledged came back to the standby and was skipped as handled.
    expect(standby.lines.filter((line) => line.startsWith('duplicate skipped'))).toEqual([
      `duplicate skipped ledger:${CRASH_AFTER}`,
    ]);
    expect(await broker.queueDepth(`${queue}.dlq`)).toBe(0);
  }, 120_000);
});
