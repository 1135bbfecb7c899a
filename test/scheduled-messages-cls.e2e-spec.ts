import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { waitForOutboxPublished } from './support/messaging-database';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import { waitFor } from './support/wait-for';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/outbox-app.js`;

/**
 * Scheduling and cancelling through nestjs-cls' `@Transactional()`, in an app wired as the order service is. A
 * child process, because nestjs-cls cannot load under Jest on Node 20. The relay's and promoter's fallback poll is
 * a minute, so the message arrives because the cls transaction's commit told the promoter when it was due.
 */
describe('scheduled messages with nestjs-cls transactions', () => {
  let setup: OutboxSetup;
  let app: ChildApp;

  beforeAll(async () => {
    setup = await outboxSetup({ tables: ['CREATE TABLE orders (id text PRIMARY KEY)'] });
    const { db, broker, exchange } = setup;
    app = ChildApp.start(FIXTURE, {
      env: {
        FIXTURE_ROLE: 'scheduling',
        DATABASE_URL: db.database.url,
        AMQP_URL: broker.url,
        FIXTURE_EXCHANGE: exchange,
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.scheduling`,
        FIXTURE_POLL_INTERVAL_MS: '60000',
      },
    });
    await app.waitForLine(/^fixture: scheduling done$/);
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await setup?.close();
  });

  it("schedules in the @Transactional() method's transaction and cancels in another; only the committed, uncancelled one is sent", async () => {
    const { db, broker, audit } = setup;
    const messages = await broker.waitForMessages(audit, 1);
    await waitForOutboxPublished(db.dataSource);
    await waitFor(
      'nothing left scheduled',
      async () =>
        (await db.dataSource.query<Array<{ n: number }>>('SELECT count(*)::int AS n FROM rm_scheduled'))[0]
          .n === 0,
    );
    messages.push(...(await broker.getAll(audit)));

    expect(messages.map((message) => JSON.parse(message.content.toString()) as { orderId: string })).toEqual([
      { orderId: 'scheduled' },
    ]);
    expect(app.lines).toContain('fixture: cancelled 1');
    expect(app.lines).toContain(
      'fixture: scheduled-rolled-back failed with order scheduled-rolled-back fails after its scheduled publish',
    );
    expect(await db.dataSource.query('SELECT id FROM orders ORDER BY id')).toEqual([{ id: 'scheduled' }]);
  });
});
