import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsIn, IsString } from 'class-validator';
import { Consume, MessagePublisher, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { createMessagingDatabase, outboxRows, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

type Step = 'plain' | 'savepoint-kept' | 'savepoint-refused' | 'refused-at-commit';

@MessageType({ type: 'shop.order-settled', idempotencyKey: (m: OrderSettled) => `settled:${m.orderId}` })
class OrderSettled {
  @IsString() orderId!: string;
  @IsIn(['plain', 'savepoint-kept', 'savepoint-refused', 'refused-at-commit'])
  step!: Step;
}

@MessageType({
  type: 'shop.ledger-noted',
  idempotencyKey: (m: LedgerNoted) => `noted:${m.orderId}:${m.part}`,
})
class LedgerNoted {
  @IsString() orderId!: string;
  @IsString() part!: string;
}

const settled = (orderId: string, step: Step): OrderSettled =>
  Object.assign(new OrderSettled(), { orderId, step });
const noted = (orderId: string, part: string): LedgerNoted =>
  Object.assign(new LedgerNoted(), { orderId, part });

const QUEUE = uniqueQueue('commit-round-trip');

/**
 * Settles orders in the handler's transaction: a row of its own, and LedgerNoted messages published before, inside
 * and after a nested transaction (a savepoint), as the step asks. Records what its own transaction saw of the
 * outbox before it committed.
 */
@Injectable()
class SettlementHandler {
  readonly outboxSeenBeforeCommit = new Map<string, number>();
  readonly attempts = new Map<string, number>();

  constructor(private readonly publisher: MessagePublisher) {}

  @Consume({
    queue: QUEUE,
    queueType: 'classic',
    retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 20 },
  })
  async onOrderSettled(event: OrderSettled, ctx: MessageContext): Promise<void> {
    const manager = ctx.manager;
    if (!manager) throw new Error('the inbox transaction is missing');
    this.attempts.set(event.orderId, (this.attempts.get(event.orderId) ?? 0) + 1);
    await manager.query('INSERT INTO settlements (order_id) VALUES ($1)', [event.orderId]);
    await this.publisher.publish(noted(event.orderId, 'before'));
    const [{ n }] = await manager.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM rm_outbox WHERE properties->'headers'->>'rm-idempotency-key' LIKE $1`,
      [`noted:${event.orderId}:%`],
    );
    this.outboxSeenBeforeCommit.set(event.orderId, n);
    if (event.step === 'savepoint-kept' || event.step === 'savepoint-refused') {
      await manager
        .transaction(async (inner) => {
          await this.publisher.publish(noted(event.orderId, 'inside'), { manager: inner });
          if (event.step === 'savepoint-refused') throw new Error('the inner step is refused');
        })
        .catch(() => undefined);
      await this.publisher.publish(noted(event.orderId, 'after'));
    }
    if (event.step === 'refused-at-commit') await this.publisher.publish(noted(event.orderId, 'refused'));
  }
}

/** The parts of one order's LedgerNoted rows, in the outbox's (and so the relay's) order. */
async function partsOf(db: MessagingDatabase, orderId: string): Promise<string[]> {
  const rows = await outboxRows(db.dataSource);
  return rows
    .filter((row) => row.type === 'shop.ledger-noted')
    .map((row) => JSON.parse(row.body) as { orderId: string; part: string })
    .filter((body) => body.orderId === orderId)
    .map((body) => body.part);
}

async function settledRows(db: MessagingDatabase, orderId: string): Promise<number> {
  const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(
    'SELECT count(*)::int AS n FROM settlements WHERE order_id = $1',
    [orderId],
  );
  return n;
}

describe("outbox: a handler's messages are written in its COMMIT's round trip", () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: SettlementHandler;

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE settlements (order_id text NOT NULL)',
      // Refuses one message's row, which the handler's transaction only writes as it commits.
      `ALTER TABLE rm_outbox ADD CONSTRAINT refuse_part CHECK (convert_from(body, 'UTF8') NOT LIKE '%"part":"refused"%')`,
    ]);
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [SettlementHandler],
      options: { dataSource: db.dataSource, outbox: { relay: false } },
    });
    handler = app.get(SettlementHandler);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  const handled = (orderId: string): Promise<void> =>
    waitFor(`order ${orderId} settled`, async () => (await settledRows(db, orderId)) === 1);

  it('holds the rows until the commit, which writes them with the inbox row and the handler’s own', async () => {
    await app.publisher.publishNow(settled('o-1', 'plain'));
    await handled('o-1');

    expect(handler.outboxSeenBeforeCommit.get('o-1')).toBe(0);
    expect(await partsOf(db, 'o-1')).toEqual(['before']);
    const [inbox] = await db.dataSource.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM rm_inbox WHERE idempotency_key = 'settled:o-1'`,
    );
    expect(inbox.n).toBe(1);
  });

  it('writes the rows held before a savepoint opens, so they keep their order and outlive a refused savepoint', async () => {
    await app.publisher.publishNow(settled('o-2', 'savepoint-kept'));
    await app.publisher.publishNow(settled('o-3', 'savepoint-refused'));
    await handled('o-2');
    await handled('o-3');

    expect(await partsOf(db, 'o-2')).toEqual(['before', 'inside', 'after']);
    expect(await partsOf(db, 'o-3')).toEqual(['before', 'after']);
    // The transaction's messages without a key of their own share one, so the relay sends them in this order.
    const keys = (await outboxRows(db.dataSource))
      .filter((row) => row.body.includes('"orderId":"o-2"'))
      .map((row) => row.orderingKey);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^rm-transaction:/);
  });

  it('rolls back the handler’s writes and its inbox row when the held rows are refused at commit, and acknowledges nothing', async () => {
    await app.publisher.publishNow(settled('o-4', 'refused-at-commit'));
    await waitFor('o-4 dead-lettered', async () => (await broker.queueDepth(`${QUEUE}.dlq`)) === 1);
    // The same connections go on working after the failed COMMIT round trip.
    await app.publisher.publishNow(settled('o-5', 'plain'));
    await handled('o-5');

    expect(handler.attempts.get('o-4')).toBe(2);
    expect(await settledRows(db, 'o-4')).toBe(0);
    expect(await partsOf(db, 'o-4')).toEqual([]);
    const [inbox] = await db.dataSource.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM rm_inbox WHERE idempotency_key = 'settled:o-4'`,
    );
    expect(inbox.n).toBe(0);
    expect(await partsOf(db, 'o-5')).toEqual(['before']);
    const counts = await queueCounts(QUEUE);
    expect(counts.ready + counts.unacked).toBe(0);
  });
});
