import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OutboxMonitor } from 'nestjs-reliable-messaging/operations';
import { ChildApp } from './support/child-app';
import type { MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/outbox-app.js`;

/** 4,000 in `npm test`; `RELAY_ROWS=10000` runs the load docs/outbox-and-inbox.md measured. */
const ROWS = Number(process.env.RELAY_ROWS ?? 4_000);
const KEYS = 40;
/** Every fifth row has no ordering key; the rest cycle through KEYS keys. */
const keyOf = (n: number): string | undefined => (n % 5 === 0 ? undefined : `account-${n % KEYS}`);

/**
 * Three relay processes share one outbox of ROWS rows (4,000 by default): four in five spread over 40 ordering keys, the rest without
 * one, written while the relays run. Every row must be published exactly once, by exactly one relay, with at
 * least two relays publishing, and each key's messages must reach the queue in the order they were written.
 */
describe('outbox: three relays at once', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let writer: MessagingTestApp;
  let exchange: string;
  let audit: string;

  beforeAll(async () => {
    setup = await outboxSetup();
    ({ db, broker, exchange, audit } = setup);
    writer = await MessagingTestApp.start(broker, {
      options: { exchange, dataSource: db.dataSource, outbox: { relay: false } },
    });
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await writer?.close();
    await setup?.close();
  });

  it('publishes every row once, none claimed by two relays, each key in order', async () => {
    const relays = [1, 2, 3].map((n) =>
      ChildApp.start(FIXTURE, {
        env: {
          FIXTURE_ROLE: 'relay',
          FIXTURE_LOG_PUBLISHED: '1',
          DATABASE_URL: db.database.url,
          AMQP_URL: broker.url,
          FIXTURE_EXCHANGE: exchange,
          FIXTURE_CONNECTION_NAME: `${broker.prefix}.relay-${n}`,
        },
      }),
    );
    await Promise.all(relays.map((relay) => relay.waitForLine(/^fixture ready role=relay$/)));

    for (let start = 1; start <= ROWS; start += 500) {
      await db.dataSource.transaction(async (manager) => {
        for (let n = start; n < start + 500; n++) {
          const key = keyOf(n);
          await writer.publisher.publish(
            { type: 'ledger.entry', payload: { n, key: key ?? null } },
            { manager, idempotencyKey: `entry-${n}`, orderingKey: key },
          );
        }
      });
    }
    const monitor = writer.get(OutboxMonitor);
    await waitFor('the outbox to drain', async () => (await monitor.backlog()).pending === 0, {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    const messages = await broker.waitForMessages(audit, ROWS, 30_000);
    await Promise.all(relays.map((relay) => relay.stop('SIGTERM')));

    const entries = messages.map(
      (message) => JSON.parse(message.content.toString()) as { n: number; key: string | null },
    );
    expect(messages).toHaveLength(ROWS);
    expect(new Set(messages.map((message) => message.properties.messageId as string)).size).toBe(ROWS);
    expect(new Set(entries.map((entry) => entry.n)).size).toBe(ROWS);

    const lastSeen = new Map<string, number>();
    const outOfOrder: string[] = [];
    for (const { n, key } of entries) {
      if (key === null) continue;
      if ((lastSeen.get(key) ?? 0) > n) outOfOrder.push(`${key}: ${n} after ${lastSeen.get(key)}`);
      lastSeen.set(key, n);
    }
    expect(outOfOrder).toEqual([]);

    const publishedBy = relays.map((relay) =>
      relay.stdout
        .filter((line) => line.startsWith('fixture: published '))
        .flatMap((line) => line.slice('fixture: published '.length).split(',').map(Number)),
    );
    const all = publishedBy.flat();
    expect(all).toHaveLength(ROWS);
    expect(new Set(all).size).toBe(ROWS);
    // The relays shared the work: at least two claimed rows side by side. All three need not: on a loaded machine
    // the first two can drain a batch before the third's claim comes round, which costs nothing here.
    expect(publishedBy.filter((ids) => ids.length > 0).length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
