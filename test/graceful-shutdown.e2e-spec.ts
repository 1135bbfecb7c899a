import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { ChildApp } from './support/child-app';
import { uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { createTestDatabase, type TestDatabase } from './support/test-database';
import { waitFor } from './support/wait-for';

const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/shutdown-app.js`;

/** The graceful shutdown of a consumer process on SIGTERM, as Kubernetes sends it, with work in flight. */
describe('graceful shutdown on SIGTERM', () => {
  let broker: TestBroker;
  let database: TestDatabase;
  let db: Client;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    database = await createTestDatabase();
    db = new Client({ connectionString: database.url });
    await db.connect();
    await db.query(
      'CREATE TABLE applied (job_id text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await db?.end();
    await database?.drop();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  function startApp(queue: string, exchange: string, env: Record<string, string>): ChildApp {
    broker.track(queue, `${queue}.dlq`, exchange, `${exchange}.dead-letter`);
    return ChildApp.start(FIXTURE, {
      env: {
        AMQP_URL: broker.url,
        DATABASE_URL: database.url,
        FIXTURE_QUEUE: queue,
        FIXTURE_EXCHANGE: exchange,
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.shutdown-app`,
        NO_COLOR: '1',
        ...env,
      },
    });
  }

  /** Publishes every job at once and waits for the broker's confirms, so the handlers start together. */
  async function publishJobs(exchange: string, ids: string[]): Promise<void> {
    await Promise.all(
      ids.map((id) =>
        broker.publishRaw({ exchange, routingKey: 'fixture.job' }, JSON.stringify({ id }), {
          type: 'fixture.job',
          messageId: id,
          contentType: 'application/json',
          persistent: true,
        }),
      ),
    );
  }

  async function appliedCounts(): Promise<{ rows: number; distinct: number }> {
    const { rows } = await db.query<{ rows: string; distinct: string }>(
      'SELECT count(*) AS rows, count(DISTINCT job_id) AS distinct FROM applied',
    );
    return { rows: Number(rows[0].rows), distinct: Number(rows[0].distinct) };
  }

  /** Ready messages and consumers, from a passive declare. */
  async function queueState(queue: string): Promise<{ messageCount: number; consumerCount: number }> {
    const { messageCount, consumerCount } = await (await broker.openChannel()).checkQueue(queue);
    return { messageCount, consumerCount };
  }

  /**
   * Waits until the queue holds `messageCount` ready messages and no consumer. A quorum queue applies the acks of
   * an app that just exited through its log, so for a moment it may still count some of them as ready; acks that
   * never arrived would keep the count above the mark, and the wait fails.
   */
  async function settlesAt(queue: string, messageCount: number): Promise<void> {
    let last: { messageCount: number; consumerCount: number } | undefined;
    await waitFor(
      () =>
        `${queue} to hold ${messageCount} ready messages and no consumer (last seen ${JSON.stringify(last)})`,
      async () => {
        last = await queueState(queue);
        return last.messageCount === messageCount && last.consumerCount === 0;
      },
    );
  }

  const started = (app: ChildApp) => app.stdout.filter((line) => line.startsWith('started ')).length;

  it('with 200 handlers in flight: finishes and acks every one, loses nothing, applies nothing twice, exits 0', async () => {
    await db.query('TRUNCATE applied');
    const queue = uniqueQueue('shutdown');
    const exchange = broker.name('shutdown.events');
    const ids = Array.from({ length: 400 }, (_, i) => `job-${i}`);
    // Long enough work that none of the 200 finishes (and lets a 201st in) before the signal, on a slow machine.
    const first = startApp(queue, exchange, { FIXTURE_CONCURRENCY: '200', FIXTURE_WORK_MS: '4000' });
    await first.waitForLine(/^fixture ready$/);

    await publishJobs(exchange, ids);
    await waitFor(
      () => `200 handlers in flight (saw ${started(first)})`,
      () => started(first) === 200,
      {
        timeoutMs: 20_000,
      },
    );
    const signalledAt = Date.now();
    first.kill('SIGTERM');
    const exit = await first.waitForExit(30_000);
    const shutdownMs = Date.now() - signalledAt;

    expect(exit).toEqual({ code: 0, signal: null });
    expect(started(first)).toBe(200);
    expect(await appliedCounts()).toEqual({ rows: 200, distinct: 200 });
    expect(first.lines).toContainEqual(
      expect.stringMatching(
        /messaging stopped in \d+ ms: 200 in-flight message\(s\) finished, 0 returned to the broker/,
      ),
    );
    // Nothing was lost: the 200 jobs not yet delivered wait in the queue. A quorum queue's passive count can stay
    // above that for a while after the app left (366 seen for over 10 s, with every ack applied: the second app
    // then applied each job exactly once); the exactly-once count below is the proof that no ack was lost.
    const left = await queueState(queue);
    expect(left.consumerCount).toBe(0);
    expect(left.messageCount).toBeGreaterThanOrEqual(200);
    expect(shutdownMs).toBeLessThan(10_000);

    const second = startApp(queue, exchange, { FIXTURE_CONCURRENCY: '200', FIXTURE_WORK_MS: '10' });
    await second.waitForLine(/^fixture ready$/);
    let applied = { rows: 0, distinct: 0 };
    await waitFor(
      () => `all 400 jobs applied and the queue empty (${JSON.stringify(applied)})`,
      async () =>
        (applied = await appliedCounts()).rows >= 400 && (await queueState(queue)).messageCount === 0,
      { timeoutMs: 20_000 },
    );
    await expect(second.stop('SIGTERM')).resolves.toEqual({ code: 0, signal: null });

    expect(await appliedCounts()).toEqual({ rows: 400, distinct: 400 });
    const { rows } = await db.query<{ job_id: string }>('SELECT job_id FROM applied');
    expect(new Set(rows.map((row) => row.job_id))).toEqual(new Set(ids));
    await settlesAt(queue, 0);
  });

  it('at the deadline: aborts the handlers still running, returns their messages to the broker, says how many, exits 0', async () => {
    await db.query('TRUNCATE applied');
    const queue = uniqueQueue('shutdown-deadline');
    const exchange = broker.name('deadline.events');
    const app = startApp(queue, exchange, {
      FIXTURE_CONCURRENCY: '20',
      FIXTURE_WORK_MS: '60000',
      FIXTURE_SHUTDOWN_TIMEOUT_MS: '1000',
    });
    await app.waitForLine(/^fixture ready$/);

    await publishJobs(
      exchange,
      Array.from({ length: 20 }, (_, i) => `slow-${i}`),
    );
    await waitFor(
      () => `20 handlers in flight (saw ${started(app)})`,
      () => started(app) === 20,
      { timeoutMs: 20_000 },
    );
    const signalledAt = Date.now();
    app.kill('SIGTERM');
    const exit = await app.waitForExit(15_000);

    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(5_000);
    expect(app.lines).toContainEqual(
      expect.stringContaining(
        '20 in-flight message(s) not finished by the deadline go back to the broker for redelivery',
      ),
    );
    expect(await appliedCounts()).toEqual({ rows: 0, distinct: 0 });
    await settlesAt(queue, 20);
  });
});
