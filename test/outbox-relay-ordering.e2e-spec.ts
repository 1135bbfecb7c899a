import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ConsumeMessage } from 'amqplib';
import { OutboxMonitor, OutboxRelay } from 'nestjs-reliable-messaging/operations';
import type { MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const KEYS = 20;
const PER_KEY = 15;
const ROWS = KEYS * PER_KEY;
/** The full queue's length: well under ROWS, so that it refuses rows in the middle of most keys. */
const LIMIT = 40;
const RELAY_OPTIONS = { pollIntervalMs: 50, retryDelay: { initialMs: 50, maxMs: 200 } };

interface Entry {
  n: number;
  key: string;
}

/** The entries of `key` whose first copy arrived out of the order they were written in. */
function outOfOrder(arrived: readonly Entry[]): string[] {
  const seen = new Set<number>();
  const last = new Map<string, number>();
  const wrong: string[] = [];
  for (const { n, key } of arrived) {
    if (seen.has(n)) continue;
    seen.add(n);
    if ((last.get(key) ?? -1) > n) wrong.push(`${key}: ${n} after ${last.get(key)}`);
    last.set(key, n);
  }
  return wrong;
}

/**
 * The relay sends a key's claimed rows back to back on one channel. A queue that refuses one of them (full, with
 * reject-publish) must stop the key there: the refused row goes again before any later row of its key, with
 * three relays sharing the outbox, and a later row routed elsewhere must not reach its queue first.
 */
describe('outbox relay: per-key order when the broker refuses a row in the middle of a key', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let writer: MessagingTestApp;
  let relays: MessagingTestApp[] = [];
  let exchange: string;

  beforeAll(async () => {
    setup = await outboxSetup({ auditBinding: 'audit.nothing' });
    ({ db, broker, exchange } = setup);
    writer = await MessagingTestApp.start(broker, {
      options: { exchange, dataSource: db.dataSource, outbox: { relay: false } },
    });
    for (let n = 0; n < 3; n++) {
      relays.push(
        await MessagingTestApp.start(broker, {
          options: { exchange, dataSource: db.dataSource, outbox: RELAY_OPTIONS },
        }),
      );
    }
  });

  afterAll(async () => {
    for (const relay of relays) await relay.close();
    relays = [];
    await writer?.close();
    await setup?.close();
  });

  it('sends each key in order through a full queue that refuses rows in the middle of keys, with three relays', async () => {
    const full = broker.name('full');
    const channel = await broker.openChannel();
    await channel.assertQueue(full, {
      durable: false,
      arguments: { 'x-max-length': LIMIT, 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(full, exchange, 'ledger.entry');

    for (let start = 0; start < ROWS; start += 100) {
      await db.dataSource.transaction(async (manager) => {
        for (let n = start; n < start + 100; n++) {
          const key = `account-${n % KEYS}`;
          await writer.publisher.publish(
            { type: 'ledger.entry', payload: { n, key } },
            { manager, idempotencyKey: `entry-${n}`, orderingKey: key },
          );
        }
      });
    }

    // A refusal in the middle of a key: a refused row with an earlier row of its key already published.
    await waitFor(
      'a row refused after an earlier row of its key was published',
      async () => {
        const [row] = await db.dataSource.query<Array<{ count: number }>>(
          `SELECT count(*)::int AS count FROM rm_outbox r WHERE r.attempts > 0 AND r.status = 'pending' ` +
            `AND EXISTS (SELECT 1 FROM rm_outbox e WHERE e.ordering_key = r.ordering_key AND e.id < r.id ` +
            `AND e.status = 'published')`,
        );
        return row.count > 0;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(await broker.queueDepth(full)).toBe(LIMIT);

    const arrived: Entry[] = [];
    const consumer = await channel.consume(full, (message: ConsumeMessage | null) => {
      if (!message) return;
      arrived.push(JSON.parse(message.content.toString()) as Entry);
      channel.ack(message);
    });
    const distinct = (): number => new Set(arrived.map((entry) => entry.n)).size;
    const monitor = writer.get(OutboxMonitor);
    await waitFor(
      () => `${ROWS} entries arrived (${distinct()}) and the outbox drained`,
      async () => distinct() === ROWS && (await monitor.backlog()).pending === 0,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await channel.cancel(consumer.consumerTag);

    expect(outOfOrder(arrived)).toEqual([]);
    const [{ published }] = await db.dataSource.query<Array<{ published: number }>>(
      `SELECT count(*)::int AS published FROM rm_outbox WHERE status = 'published'`,
    );
    expect(published).toBe(ROWS);
    await channel.deleteQueue(full);
  }, 120_000);

  it('waits for a refused row before sending the next row of its key to another routing key', async () => {
    const refusing = broker.name('refusing');
    const open = broker.name('open');
    const channel = await broker.openChannel();
    await channel.assertQueue(refusing, {
      durable: false,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(refusing, exchange, 'ledger.closed');
    await channel.assertQueue(open, { durable: false });
    await channel.bindQueue(open, exchange, 'ledger.open');
    await db.dataSource.transaction(async (manager) => {
      await writer.publisher.publish(
        { type: 'ledger.closed', payload: { n: 1 } },
        { manager, idempotencyKey: 'closed-1', orderingKey: 'account-x' },
      );
      await writer.publisher.publish(
        { type: 'ledger.open', payload: { n: 2 } },
        { manager, idempotencyKey: 'open-2', orderingKey: 'account-x' },
      );
    });

    await waitFor(
      'the first row refused twice',
      async () => {
        const [row] = await db.dataSource.query<Array<{ attempts: number }>>(
          `SELECT attempts FROM rm_outbox WHERE routing_key = 'ledger.closed'`,
        );
        return row.attempts >= 2;
      },
      { timeoutMs: 10_000, intervalMs: 25 },
    );
    expect(await broker.queueDepth(open)).toBe(0);

    // The open queue is bound before the refusing one goes: a retry in between would find no route and be parked.
    await channel.bindQueue(open, exchange, 'ledger.closed');
    await channel.unbindQueue(refusing, exchange, 'ledger.closed');
    const messages = await broker.waitForMessages(open, 2);
    expect(messages.map((message) => message.fields.routingKey)).toEqual(['ledger.closed', 'ledger.open']);
    await channel.deleteQueue(refusing);
    await channel.deleteQueue(open);
  });
});

/**
 * Each relay worker claims only its share of the ordering keys, so a commit must wake every idle worker: the one
 * woken alone finds nothing of its share while the rows committed wait for the other worker's next poll.
 */
describe('outbox relay: a commit wakes every worker, each with its share of the keys', () => {
  let setup: OutboxSetup;
  let relay: MessagingTestApp;

  afterAll(async () => {
    await relay?.close();
    await setup?.close();
  });

  it('publishes rows of every share at once after the commit, not at the next poll a minute later', async () => {
    setup = await outboxSetup({ auditBinding: 'audit.nothing' });
    const { db, broker, exchange } = setup;
    relay = await MessagingTestApp.start(broker, {
      options: { exchange, dataSource: db.dataSource, outbox: { concurrency: 2, pollIntervalMs: 60_000 } },
    });
    const queue = broker.name('woken');
    const channel = await broker.openChannel();
    await channel.assertQueue(queue, { durable: false });
    await channel.bindQueue(queue, exchange, 'ledger.woken');
    const idleWorkers = (): number =>
      (relay.get(OutboxRelay) as unknown as { idleWorkers: Set<unknown> }).idleWorkers.size;
    await waitFor('both relay workers idle', () => idleWorkers() === 2, {
      timeoutMs: 10_000,
      intervalMs: 20,
    });

    await db.dataSource.transaction(async (manager) => {
      for (let n = 0; n < 20; n++) {
        await relay.publisher.publish(
          { type: 'ledger.woken', payload: { n } },
          { manager, idempotencyKey: `woken-${n}`, orderingKey: `account-${n}` },
        );
      }
    });

    const messages = await broker.waitForMessages(queue, 20, 15_000);
    expect(new Set(messages.map((m) => (JSON.parse(m.content.toString()) as { n: number }).n)).size).toBe(20);
    await channel.deleteQueue(queue);
  }, 60_000);
});
