import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsInt, IsOptional, IsString } from 'class-validator';
import type { GetMessage } from 'amqplib';
import {
  ConfigurationError,
  HEADERS,
  MessagePublisher,
  MessageType,
  NoTransactionError,
  PayloadTooLargeError,
} from 'nestjs-reliable-messaging';
import { outboxRows, waitForOutboxPublished, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.order-placed', idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
}

@MessageType({
  type: 'shop.order-line-added',
  idempotencyKey: (m: OrderLineAdded) => `order-line-added:${m.orderId}:${m.line}`,
  orderingKey: (m: OrderLineAdded) => m.orderId,
})
class OrderLineAdded {
  @IsString() orderId!: string;
  @IsInt() line!: number;
  @IsOptional() @IsString() note?: string;
}

const lineAdded = (orderId: string, line: number): OrderLineAdded =>
  Object.assign(new OrderLineAdded(), { orderId, line });
const placed = (orderId: string): OrderPlaced => Object.assign(new OrderPlaced(), { orderId });
const orderIdOf = (message: GetMessage): string =>
  (JSON.parse(message.content.toString()) as OrderPlaced).orderId;

/**
 * The outbox on the real PostgreSQL and RabbitMQ, with the relay in-process: a message commits or rolls back
 * with the transaction that published it. The relay's fallback poll is set to a minute, so every message seen
 * here was relayed because its commit woke the relay.
 */
describe('outbox: a message commits or rolls back with its transaction', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let publisher: MessagePublisher;
  let audit: string;
  const received: GetMessage[] = [];

  /** Takes what reached the audit queue so far into `received`; resolves with the order ids seen. */
  async function drain(): Promise<string[]> {
    received.push(...(await broker.getAll(audit)));
    return received.map(orderIdOf);
  }

  /** Waits until the orders' messages reached the audit queue and the relay marked their rows published. */
  async function waitForOrders(...orderIds: string[]): Promise<void> {
    await waitFor(
      () => `orders ${orderIds.join(', ')} on the audit queue (saw ${received.map(orderIdOf).join(', ')})`,
      async () => {
        const seen = await drain();
        return orderIds.every((id) => seen.includes(id));
      },
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    await waitForOutboxPublished(db.dataSource, (row) =>
      orderIds.some((id) => row.body.includes(`"orderId":"${id}"`)),
    );
  }

  beforeAll(async () => {
    setup = await outboxSetup({ tables: ['CREATE TABLE orders (id text PRIMARY KEY)'] });
    ({ db, broker, audit } = setup);
    const { exchange } = setup;
    app = await MessagingTestApp.start(broker, {
      options: { exchange, dataSource: db.dataSource, outbox: { pollIntervalMs: 60_000 } },
    });
    publisher = app.publisher;
  });

  afterAll(async () => {
    await app?.close();
    await setup?.close();
  });

  it('publishes the message of a committed transaction and never the one of a rolled-back transaction', async () => {
    await db.dataSource.transaction(async (manager) => {
      await manager.query(`INSERT INTO orders (id) VALUES ('committed')`);
      await publisher.publish(placed('committed'), { manager });
    });
    await expect(
      db.dataSource.transaction(async (manager) => {
        await manager.query(`INSERT INTO orders (id) VALUES ('rolled-back')`);
        await publisher.publish(placed('rolled-back'), { manager });
        throw new Error('the business rule fails after the publish');
      }),
    ).rejects.toThrow('the business rule fails after the publish');
    await db.dataSource.transaction((manager) => publisher.publish(placed('committed-later'), { manager }));

    await waitForOrders('committed', 'committed-later');

    // Different orders have different ordering keys, so their relative arrival order is not promised.
    expect(received.map(orderIdOf).sort()).toEqual(['committed', 'committed-later']);
    expect((await outboxRows(db.dataSource)).map((row) => [row.body, row.status])).toEqual([
      ['{"orderId":"committed"}', 'published'],
      ['{"orderId":"committed-later"}', 'published'],
    ]);
    expect(await db.dataSource.query('SELECT id FROM orders ORDER BY id')).toEqual([{ id: 'committed' }]);
  });

  it('relays the message exactly as the envelope was built: ids, type and headers', async () => {
    const receipt = await db.dataSource.transaction((manager) =>
      publisher.publish(placed('envelope'), {
        manager,
        correlationId: 'flow-7',
        headers: { tenant: 'acme' },
      }),
    );
    await waitForOrders('envelope');

    const message = received.find((m) => orderIdOf(m) === 'envelope') as GetMessage;
    expect(message.properties).toMatchObject({
      messageId: receipt.messageId,
      type: 'shop.order-placed',
      correlationId: 'flow-7',
      contentType: 'application/json',
      deliveryMode: 2,
    });
    expect(message.properties.headers).toMatchObject({
      tenant: 'acme',
      [HEADERS.idempotencyKey]: 'order-placed:envelope',
      [HEADERS.schemaVersion]: '1.0',
      // Without a key of its own, the message is ordered by its id; its row is keyless, so no relay locks it.
      [HEADERS.orderingKey]: receipt.messageId,
    });
    expect(message.fields.routingKey).toBe('shop.order-placed');
    const row = (await outboxRows(db.dataSource)).find((r) => r.messageId === receipt.messageId);
    expect(row?.orderingKey).toBeNull();
  });

  it('refuses publish() outside any transaction, naming publishNow(), and writes nothing', async () => {
    const before = (await outboxRows(db.dataSource)).length;

    await expect(publisher.publish(placed('no-transaction'))).rejects.toThrow(NoTransactionError);
    await expect(publisher.publish(placed('no-transaction'))).rejects.toThrow(/publishNow\(\)/);
    await expect(
      publisher.publish(placed('plain-manager'), { manager: db.dataSource.manager }),
    ).rejects.toThrow(/the EntityManager passed as \{ manager \} is not inside a transaction/);

    expect(await outboxRows(db.dataSource)).toHaveLength(before);
  });

  it('still publishes a row whose transaction commits after later rows were already published', async () => {
    const late = db.dataSource.createQueryRunner();
    await late.startTransaction();
    await publisher.publish(placed('late'), { manager: late.manager });
    await db.dataSource.transaction((manager) => publisher.publish(placed('early'), { manager }));
    await waitForOrders('early');
    expect(received.map(orderIdOf)).not.toContain('late');

    await late.commitTransaction();
    await late.release();
    await waitForOrders('late');

    const rows = await outboxRows(db.dataSource);
    const lateRow = rows.find((row) => row.body.includes('"late"'));
    const earlyRow = rows.find((row) => row.body.includes('"early"'));
    expect(lateRow?.id).toBeLessThan(earlyRow?.id as number);
    expect([lateRow?.status, earlyRow?.status]).toEqual(['published', 'published']);
  });

  it('publishAll() writes a batch in its order, and the batch commits or rolls back with its transaction', async () => {
    const batch = [placed('batch'), lineAdded('batch', 1), lineAdded('batch', 2), lineAdded('batch', 3)];
    const receipts = await db.dataSource.transaction((manager) => publisher.publishAll(batch, { manager }));
    await expect(
      db.dataSource.transaction(async (manager) => {
        await publisher.publishAll([placed('batch-rolled-back'), lineAdded('batch-rolled-back', 1)], {
          manager,
        });
        throw new Error('the business rule fails after the publish');
      }),
    ).rejects.toThrow('the business rule fails after the publish');
    await waitFor(
      'the four messages of the batch on the audit queue',
      async () => (await drain()).filter((id) => id === 'batch').length === 4,
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    await waitForOrders('batch');

    const ids = receipts.map((receipt) => receipt.messageId);
    expect(new Set(ids).size).toBe(4);
    const rows = (await outboxRows(db.dataSource)).filter((row) => row.body.includes('"batch'));
    // One row per message, ids drawn in the batch's order; the lines carry their order's key.
    expect(rows.map((row) => row.messageId)).toEqual(ids);
    expect(rows.map((row) => [row.type, row.orderingKey, row.status])).toEqual([
      ['shop.order-placed', null, 'published'],
      ['shop.order-line-added', 'batch', 'published'],
      ['shop.order-line-added', 'batch', 'published'],
      ['shop.order-line-added', 'batch', 'published'],
    ]);
    const lines = received
      .filter(
        (message) => message.properties.type === 'shop.order-line-added' && orderIdOf(message) === 'batch',
      )
      .map((message) => (JSON.parse(message.content.toString()) as OrderLineAdded).line);
    expect(lines).toEqual([1, 2, 3]);
    expect(received.map(orderIdOf)).not.toContain('batch-rolled-back');
  });

  it('publishAll() with one message that cannot be sent (too large) writes none of the batch', async () => {
    // Above maxPayloadBytes' default of 256 KiB.
    const tooLarge = Object.assign(lineAdded('too-large-batch', 2), { note: 'x'.repeat(300 * 1024) });
    const before = (await outboxRows(db.dataSource)).length;

    await expect(
      db.dataSource.transaction((manager) =>
        publisher.publishAll([placed('too-large-batch'), lineAdded('too-large-batch', 1), tooLarge], {
          manager,
        }),
      ),
    ).rejects.toThrow(PayloadTooLargeError);

    expect(await outboxRows(db.dataSource)).toHaveLength(before);
  });

  it('publishAll() gives { type, payload } messages their own keys, and refuses one idempotencyKey for several', async () => {
    const reserved = (sku: string) => ({
      type: 'shop.stock-reserved',
      payload: { orderId: 'raw-batch', sku },
      idempotencyKey: `stock-reserved:raw-batch:${sku}`,
      orderingKey: 'raw-batch',
    });
    await db.dataSource.transaction((manager) =>
      publisher.publishAll([reserved('sku-a'), reserved('sku-b')], { manager }),
    );
    const before = (await outboxRows(db.dataSource)).length;
    const shared = db.dataSource.transaction((manager) =>
      publisher.publishAll([placed('shared-key-1'), placed('shared-key-2')], {
        manager,
        idempotencyKey: 'same',
      }),
    );
    await expect(shared).rejects.toThrow(ConfigurationError);
    await expect(shared).rejects.toThrow(/2 messages and one idempotencyKey \('same'\)/);
    await waitFor(
      'the two raw messages on the audit queue',
      async () => (await drain()).filter((id) => id === 'raw-batch').length === 2,
      { timeoutMs: 10_000, intervalMs: 20 },
    );

    const headers = received
      .filter((message) => orderIdOf(message) === 'raw-batch')
      .map((message) => message.properties.headers as Record<string, unknown>);
    expect(headers.map((each) => [each[HEADERS.idempotencyKey], each[HEADERS.orderingKey]])).toEqual([
      ['stock-reserved:raw-batch:sku-a', 'raw-batch'],
      ['stock-reserved:raw-batch:sku-b', 'raw-batch'],
    ]);
    expect(await outboxRows(db.dataSource)).toHaveLength(before);
    expect(received.map(orderIdOf)).not.toContain('shared-key-1');
  });

  it('publishes at once with publishNow(), writing no outbox row', async () => {
    const before = (await outboxRows(db.dataSource)).length;

    await publisher.publishNow(placed('now'));
    await waitForOrders('now');

    expect(await outboxRows(db.dataSource)).toHaveLength(before);
  });
});

describe('outbox: a relay in another app', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let writer: MessagingTestApp;
  let relay: MessagingTestApp;
  let audit: string;

  beforeAll(async () => {
    setup = await outboxSetup();
    ({ db, broker, audit } = setup);
    const { exchange } = setup;
    writer = await MessagingTestApp.start(broker, {
      options: { exchange, dataSource: db.dataSource, outbox: { relay: false } },
    });
    relay = await MessagingTestApp.start(broker, {
      options: {
        exchange,
        dataSource: await db.connect(),
        consumersEnabled: false,
        outbox: { pollIntervalMs: 60_000 },
      },
    });
  });

  afterAll(async () => {
    await relay?.close();
    await writer?.close();
    await setup?.close();
  });

  it("is woken by the NOTIFY the writer sends after its commit, long before the relay's next poll", async () => {
    // The relay LISTENs once it has started; a NOTIFY sent before that would only be found by the next poll.
    await waitFor('the relay listening for commits', async () => {
      const rows = await db.dataSource.query<unknown[]>(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN "rm_outbox"'`,
      );
      return rows.length > 0;
    });
    const started = Date.now();
    await db.dataSource.transaction((manager) => writer.publisher.publish(placed('remote'), { manager }));

    const [message] = await broker.waitForMessages(audit, 1, 5_000);

    expect(orderIdOf(message)).toBe('remote');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
