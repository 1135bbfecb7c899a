import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { HEADERS } from 'nestjs-reliable-messaging';
import { ChildApp } from './support/child-app';
import { createMessagingDatabase, outboxRows, type MessagingDatabase } from './support/messaging-database';
import { queueCounts } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/outbox-app.js`;

/**
 * A deduplicating consumer in a child process is killed with SIGKILL after its handler's transaction
 * committed and before the acknowledgement reached the broker. The broker redelivers the message to the next
 * consumer process, whose inbox recognises it: the effect and the OrderPaid it published exist once.
 */
describe('inbox: a consumer killed between its commit and its ack', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let exchange: string;
  let queue: string;

  function startConsumer(env: Record<string, string> = {}): ChildApp {
    return ChildApp.start(FIXTURE, {
      env: {
        FIXTURE_ROLE: 'consumer',
        DATABASE_URL: db.database.url,
        AMQP_URL: broker.url,
        FIXTURE_EXCHANGE: exchange,
        FIXTURE_QUEUE: queue,
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.consumer`,
        ...env,
      },
    });
  }

  async function count(sql: string): Promise<number> {
    const [row] = await db.dataSource.query<Array<{ n: number }>>(sql);
    return row.n;
  }

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE effects (id serial PRIMARY KEY, key text NOT NULL, message_id text NOT NULL, pid int NOT NULL)',
    ]);
    broker = await TestBroker.connect();
    exchange = broker.name('events');
    queue = broker.name('payments');
    broker.track(`${exchange}.dead-letter`, `${queue}.dlq`);
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('redelivers the message and applies its effect and its outgoing message once', async () => {
    const crashing = startConsumer({ FIXTURE_KILL_POINT: 'before-ack' });
    await crashing.waitForLine(/^fixture ready/);
    const messageId = randomUUID();
    await broker.publishRaw({ exchange, routingKey: 'fixture.order-placed' }, '{"orderId":"o-1"}', {
      messageId,
      type: 'fixture.order-placed',
      contentType: 'application/json',
      headers: { [HEADERS.idempotencyKey]: 'order-placed:o-1' },
    });
    await crashing.waitForLine(new RegExp(`^fixture: committed, not acked ${messageId}$`));
    expect(await crashing.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });

    expect(await count('SELECT count(*)::int AS n FROM effects')).toBe(1);
    expect(await count('SELECT count(*)::int AS n FROM rm_inbox')).toBe(1);
    expect((await outboxRows(db.dataSource)).map((row) => [row.type, row.body])).toEqual([
      ['fixture.order-paid', '{"orderId":"o-1"}'],
    ]);

    const next = startConsumer();
    await next.waitForLine(/^fixture: duplicate order-placed:o-1$/);
    await waitFor('the redelivered copy to be acknowledged', async () => {
      const counts = await queueCounts(queue);
      return counts.ready + counts.unacked === 0;
    });
    await next.stop('SIGTERM');

    expect(next.lines.filter((line) => line.startsWith('fixture: handled'))).toEqual([]);
    expect(await db.dataSource.query('SELECT key, message_id AS "messageId", pid FROM effects')).toEqual([
      { key: 'order-placed:o-1', messageId, pid: crashing.pid },
    ]);
    expect(await count('SELECT count(*)::int AS n FROM rm_inbox')).toBe(1);
    expect(await outboxRows(db.dataSource)).toHaveLength(1);
    expect(await broker.queueDepth(`${queue}.dlq`)).toBe(0);
  });
});
