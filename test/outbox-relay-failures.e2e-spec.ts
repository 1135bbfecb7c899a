import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsString } from 'class-validator';
import { MessageType, type MessagePublisher } from 'nestjs-reliable-messaging';
import { OutboxMonitor, OutboxRelay, type OutboxBacklog } from 'nestjs-reliable-messaging/operations';
import { OutboxPruner } from 'nestjs-reliable-messaging/operations';
import { outboxRows, type MessagingDatabase, type OutboxRowView } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.order-placed', idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
}

const placed = (orderId: string): OrderPlaced => Object.assign(new OrderPlaced(), { orderId });

async function rowOf(db: MessagingDatabase, bodyPart: string): Promise<OutboxRowView> {
  const row = (await outboxRows(db.dataSource)).find((r) => r.body.includes(bodyPart));
  if (!row) throw new Error(`no outbox row with ${bodyPart}`);
  return row;
}

async function waitForRow(
  db: MessagingDatabase,
  bodyPart: string,
  done: (row: OutboxRowView) => boolean,
): Promise<OutboxRowView> {
  let last: OutboxRowView | undefined;
  await waitFor(
    () => `outbox row ${bodyPart} (last seen ${JSON.stringify(last)})`,
    async () => {
      last = await rowOf(db, bodyPart);
      return done(last);
    },
    { timeoutMs: 10_000, intervalMs: 25 },
  );
  return last as OutboxRowView;
}

describe('outbox relay: rows it cannot publish', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let publisher: MessagePublisher;
  let exchange: string;

  beforeAll(async () => {
    setup = await outboxSetup({ auditBinding: 'shop.#' });
    ({ db, broker, exchange } = setup);
    app = await MessagingTestApp.start(broker, {
      options: {
        exchange,
        dataSource: db.dataSource,
        maxPayloadBytes: 1024,
        outbox: { pollIntervalMs: 100, retryDelay: { initialMs: 100, maxMs: 300 } },
      },
    });
    publisher = app.publisher;
  });

  afterAll(async () => {
    await app?.close();
    await setup?.close();
  });

  it('parks an unroutable message with its reason, publishes the rest of its batch, and relays it once put back', async () => {
    await db.dataSource.transaction(async (manager) => {
      await publisher.publish(
        { type: 'nobody.listens', payload: { n: 1 } },
        { manager, idempotencyKey: 'unroutable-1' },
      );
      await publisher.publish(placed('beside-unroutable'), { manager });
    });

    const parked = await waitForRow(db, '"n":1', (row) => row.status === 'parked');
    expect(parked.lastError).toMatch(/^unroutable: .*NO_ROUTE/);
    expect((await waitForRow(db, 'beside-unroutable', (row) => row.status !== 'pending')).status).toBe(
      'published',
    );
    const monitor = app.get(OutboxMonitor);
    expect(await monitor.parked()).toEqual([
      expect.objectContaining({ id: String(parked.id), type: 'nobody.listens', reason: parked.lastError }),
    ]);

    const listeners = broker.name('listeners');
    const channel = await broker.openChannel();
    await channel.assertQueue(listeners, { durable: false });
    await channel.bindQueue(listeners, exchange, 'nobody.listens');
    expect(await monitor.retryParked([String(parked.id)])).toBe(1);

    expect((await waitForRow(db, '"n":1', (row) => row.status === 'published')).status).toBe('published');
    expect(await broker.waitForMessages(listeners, 1)).toHaveLength(1);
  });

  it('parks a message for an exchange that does not exist without failing the other messages in flight', async () => {
    await db.dataSource.transaction(async (manager) => {
      await publisher.publish(placed('to-missing-exchange'), { manager, exchange: broker.name('missing') });
      await publisher.publish(placed('beside-missing-exchange'), { manager });
    });

    const parked = await waitForRow(db, 'to-missing-exchange', (row) => row.status === 'parked');
    expect(parked.lastError).toBe(`exchange-not-found: exchange '${broker.name('missing')}' does not exist`);
    const beside = await waitForRow(db, 'beside-missing-exchange', (row) => row.status !== 'pending');
    expect([beside.status, beside.attempts]).toEqual(['published', 0]);
  });

  it('parks a stored row larger than the payload limit', async () => {
    await db.dataSource.query(
      `INSERT INTO rm_outbox (message_id, exchange, routing_key, properties, body) ` +
        `VALUES (gen_random_uuid(), $1, 'shop.oversized', $2, convert_to(repeat('x', 2000), 'UTF8'))`,
      [exchange, JSON.stringify({ messageId: 'oversized', type: 'shop.oversized', headers: {} })],
    );
    await db.dataSource.query(`SELECT pg_notify('rm_outbox', '')`);

    const parked = await waitForRow(db, 'xxxx', (row) => row.status === 'parked');
    expect(parked.lastError).toBe('payload-too-large: 2000 bytes, above maxPayloadBytes 1024');
  });

  it('retries a refused message with backoff and holds back the later messages of its ordering key until it goes', async () => {
    const full = broker.name('full');
    const channel = await broker.openChannel();
    await channel.assertQueue(full, {
      durable: false,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(full, exchange, 'stock.reserved');
    await db.dataSource.transaction(async (manager) => {
      await publisher.publish(
        { type: 'stock.reserved', payload: { sku: 'sku-1' } },
        { manager, idempotencyKey: 'reserved-1', orderingKey: 'sku-1' },
      );
      await publisher.publish(placed('same-key-after-refused'), { manager, orderingKey: 'sku-1' });
      await publisher.publish(placed('other-key'), { manager, orderingKey: 'sku-2' });
    });

    const refused = await waitForRow(db, '"sku":"sku-1"', (row) => row.attempts >= 2);
    expect([refused.status, refused.lastError]).toEqual(['pending', expect.stringMatching(/refused/)]);
    const held = await rowOf(db, 'same-key-after-refused');
    expect([held.status, held.attempts]).toEqual(['pending', 0]);
    expect((await rowOf(db, 'other-key')).status).toBe('published');

    // The new queue is bound before the full one goes: a retry in between would find no route and be parked.
    const stock = broker.name('stock');
    await channel.assertQueue(stock, { durable: false });
    await channel.bindQueue(stock, exchange, 'stock.reserved');
    await channel.deleteQueue(full);

    await waitForRow(db, 'same-key-after-refused', (row) => row.status === 'published');
    const [first, second] = await db.dataSource.query<Array<{ publishedAt: Date }>>(
      `SELECT published_at AS "publishedAt" FROM rm_outbox WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [[refused.id, held.id]],
    );
    expect(second.publishedAt.getTime()).toBeGreaterThanOrEqual(first.publishedAt.getTime());
    expect((await rowOf(db, '"sku":"sku-1"')).status).toBe('published');
    expect(app.get(OutboxRelay).stats.failed).toBeGreaterThanOrEqual(2);
  });

  it('keeps relaying after a run of refusals replaced the publisher channel, with nothing else publishing', async () => {
    const refusing = broker.name('refusing');
    const channel = await broker.openChannel();
    await channel.assertQueue(refusing, {
      durable: false,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(refusing, exchange, 'ledger.refused');
    // Refusals in a row for over a second make the publisher replace its channel; nothing publishes after that.
    const reopened = () => app.logger.find('warn', /opening a new publisher channel/).length > 0;
    const giveUpAt = Date.now() + 10_000;
    for (let n = 0; !reopened(); n++) {
      await expect(
        publisher.publishNow({ type: 'ledger.refused', payload: { n } }, { idempotencyKey: `refused-${n}` }),
      ).rejects.toThrow(/refused/);
      if (Date.now() > giveUpAt) throw new Error('the publisher never replaced its channel');
    }

    await db.dataSource.transaction((manager) => publisher.publish(placed('after-reopen'), { manager }));
    expect((await waitForRow(db, 'after-reopen', (row) => row.status === 'published')).attempts).toBe(0);
    await channel.deleteQueue(refusing);
  });
});

describe('outbox relay: backlog, a relay in another process, pruning', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let writer: MessagingTestApp;
  let relay: MessagingTestApp | undefined;
  let exchange: string;

  beforeAll(async () => {
    setup = await outboxSetup();
    ({ db, broker, exchange } = setup);
    writer = await MessagingTestApp.start(broker, {
      options: { exchange, dataSource: db.dataSource, outbox: { relay: false } },
    });
  });

  afterAll(async () => {
    await relay?.close();
    await writer?.close();
    await setup?.close();
  });

  it('reports the backlog while no relay runs, and a relay-only app drains it', async () => {
    await db.dataSource.transaction(async (manager) => {
      for (const id of ['b1', 'b2', 'b3']) await writer.publisher.publish(placed(id), { manager });
    });

    // The oldest row's age grows while nothing relays: wait until the monitor reports it a second old.
    let backlog: OutboxBacklog | undefined;
    await waitFor(
      () => `the oldest pending row to be reported a second old (last seen ${JSON.stringify(backlog)})`,
      async () => {
        backlog = await writer.get(OutboxMonitor).backlog();
        return backlog.oldestAgeSeconds >= 1;
      },
    );
    expect(backlog).toEqual({ pending: 3, oldestAgeSeconds: expect.any(Number), parked: 0 });
    expect(backlog?.oldestAgeSeconds).toBeLessThan(30);

    relay = await MessagingTestApp.start(broker, {
      options: {
        exchange,
        dataSource: await db.connect(),
        consumersEnabled: false,
        outbox: { retentionMs: 0, pruneIntervalMs: 3_600_000 },
      },
    });
    await waitFor(
      'the relay-only app to drain the backlog',
      async () => (await writer.get(OutboxMonitor).backlog()).pending === 0,
    );
    expect(await broker.waitForMessages(setup.audit, 3)).toHaveLength(3);
  });

  it('prunes published rows past their retention and leaves pending ones', async () => {
    await db.dataSource.transaction((manager) =>
      writer.publisher.publish(placed('still-pending'), { manager }),
    );
    await relay?.close();
    relay = undefined;
    await db.dataSource.transaction((manager) =>
      writer.publisher.publish(placed('pending-after-relay'), { manager }),
    );
    const pruner = await MessagingTestApp.start(broker, {
      options: {
        exchange,
        dataSource: db.dataSource,
        consumersEnabled: false,
        outbox: { relay: false, retentionMs: 0 },
      },
    });

    const before = await outboxRows(db.dataSource);
    const deleted = await pruner.get(OutboxPruner).pruneNow();
    await pruner.close();

    const after = await outboxRows(db.dataSource);
    expect(deleted).toBe(before.filter((row) => row.status === 'published').length);
    expect(after.map((row) => row.status)).toEqual(after.map(() => 'pending'));
    expect(after.map((row) => row.body)).toContain('{"orderId":"pending-after-relay"}');
  });
});
