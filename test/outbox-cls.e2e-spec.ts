import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { outboxRows, waitForOutboxPublished, type MessagingDatabase } from './support/messaging-database';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/outbox-app.js`;

/**
 * The contract apps build on, in an app wired as the order service is (TypeORM, nestjs-cls with its
 * transactional plugin, the module on the app's DataSource). It runs as a child process because nestjs-cls
 * cannot load under Jest on Node 20. The fixture's scenarios: `@Transactional()` with `publish()` inside,
 * committing and rolling back; `@Transactional() @Publish()` on one method, returning one event and an array of
 * them; `@Publish()` alone; `publish()` outside any transaction.
 */
describe('outbox with nestjs-cls transactions', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let audit: string;
  let app: ChildApp;

  beforeAll(async () => {
    setup = await outboxSetup({ tables: ['CREATE TABLE orders (id text PRIMARY KEY)'] });
    ({ db, broker, audit } = setup);
    const { exchange } = setup;
    app = ChildApp.start(FIXTURE, {
      env: {
        FIXTURE_ROLE: 'scenarios',
        DATABASE_URL: db.database.url,
        AMQP_URL: broker.url,
        FIXTURE_EXCHANGE: exchange,
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.scenarios`,
      },
    });
    await app.waitForLine(/^fixture: scenarios done$/);
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await setup?.close();
  });

  it('commits each order with its OrderPlaced and relays it; a rolled-back order leaves neither', async () => {
    const messages = await broker.waitForMessages(audit, 5);
    await waitForOutboxPublished(db.dataSource);
    messages.push(...(await broker.getAll(audit)));

    // Messages without an ordering key carry no order: the relay's workers may publish two rows at once.
    const orderIds = messages
      .map((message) => (JSON.parse(message.content.toString()) as { orderId: string }).orderId)
      .sort();
    expect(orderIds).toEqual([
      'committed',
      'decorated',
      'decorated-batch-1',
      'decorated-batch-2',
      'decorated-no-transactional',
    ]);
    expect(await db.dataSource.query('SELECT id FROM orders ORDER BY id')).toEqual([
      { id: 'committed' },
      { id: 'decorated' },
      { id: 'decorated-batch-1' },
      { id: 'decorated-batch-2' },
      { id: 'decorated-no-transactional' },
    ]);
    expect((await outboxRows(db.dataSource)).map((row) => [row.body, row.status])).toEqual([
      ['{"orderId":"committed"}', 'published'],
      ['{"orderId":"decorated"}', 'published'],
      ['{"orderId":"decorated-batch-1"}', 'published'],
      ['{"orderId":"decorated-batch-2"}', 'published'],
      ['{"orderId":"decorated-no-transactional"}', 'published'],
    ]);
    expect(app.lines).toContain('fixture: rolled-back failed with order rolled-back fails after its publish');
  });

  it('refuses publish() outside any transaction with NoTransactionError', () => {
    expect(app.lines).toContain('fixture: outside failed with NoTransactionError');
  });

  it('stops the relay as a step of graceful shutdown on SIGTERM', async () => {
    await app.stop('SIGTERM');

    const relayStopped = app.lines.findIndex((line) =>
      /outbox relay stopped: 5 message\(s\) published, 0 parked/.test(line),
    );
    const messagingStopped = app.lines.findIndex((line) => /messaging stopped in \d+ ms/.test(line));
    expect(relayStopped).toBeGreaterThan(-1);
    expect(messagingStopped).toBeGreaterThan(relayStopped);
    expect(app.stderr.filter((line) => /outbox relay|shutdown step/.test(line))).toEqual([]);
  });
});
