import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import { Registry, type Counter } from 'prom-client';
import { Consume, MessageType, VersionGuard, type MessageContext } from 'nestjs-reliable-messaging';
import { STALE_MESSAGES_METRIC } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({
  type: 'catalog.price-changed',
  idempotencyKey: (m: PriceChanged) => `price:${m.sku}:${m.version}:${m.cents}`,
})
class PriceChanged {
  @IsString() sku!: string;
  @IsInt() version!: number;
  @IsInt() cents!: number;
}

const IN_MEMORY = uniqueQueue('prices-in-memory');
const IN_DATABASE = uniqueQueue('prices-in-database');

/** Holds prices in memory and compares versions itself. */
@Injectable()
class InMemoryPrices {
  readonly prices = new Map<string, { cents: number; version: number }>();
  constructor(private readonly versions: VersionGuard) {}

  @Consume({ queue: IN_MEMORY, dedup: false })
  async onPriceChanged(event: PriceChanged, ctx: MessageContext): Promise<void> {
    if (this.versions.isStale(ctx, { current: this.prices.get(event.sku)?.version, incoming: event.version }))
      return;
    this.prices.set(event.sku, { cents: event.cents, version: event.version });
  }
}

/** Lets PostgreSQL compare versions in a conditional upsert, race-free under concurrent handlers. */
@Injectable()
class DatabasePrices {
  constructor(private readonly versions: VersionGuard) {}

  @Consume({ queue: IN_DATABASE })
  async onPriceChanged(event: PriceChanged, ctx: MessageContext): Promise<void> {
    const rows = await ctx.manager!.query<unknown[]>(
      'INSERT INTO prices (sku, cents, version) VALUES ($1, $2, $3) ' +
        'ON CONFLICT (sku) DO UPDATE SET cents = EXCLUDED.cents, version = EXCLUDED.version ' +
        'WHERE prices.version < EXCLUDED.version RETURNING 1',
      [event.sku, event.cents, event.version],
    );
    if (rows.length === 0)
      this.versions.discard(ctx, `version ${event.version} is not newer than the stored one`);
  }
}

/**
 * The version guard of order-independent handlers: a message older than (or as old as) the state already held
 * is discarded instead of overwriting newer state, acknowledged, and counted in
 * rm_stale_messages_discarded_total{queue,type}; a newer one is applied, whatever order they arrive in.
 */
describe('ordering: a stale version is discarded and counted', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let registry: Registry;
  let inMemory: InMemoryPrices;

  const price = (sku: string, version: number, cents: number): PriceChanged =>
    Object.assign(new PriceChanged(), { sku, version, cents });

  /** A counter of the module's registry for one queue and the price type, 0 before its first increment. */
  async function counted(metric: string, queue: string): Promise<number> {
    const { values } = await (registry.getSingleMetric(metric) as Counter<'queue' | 'type'>).get();
    return (
      values.find((v) => v.labels.queue === queue && v.labels.type === 'catalog.price-changed')?.value ?? 0
    );
  }

  const discarded = (queue: string) => counted(STALE_MESSAGES_METRIC, queue);
  /** Messages handled successfully: counted once the handler's transaction has committed. */
  const consumed = (queue: string) => counted('rm_messages_consumed_total', queue);

  /** Waits until both consumers have handled and committed `count` more messages than `before`. */
  async function waitForConsumed(what: string, before: number[], count: number): Promise<void> {
    let now: number[] = [];
    await waitFor(
      () => `${what} consumed by both consumers (${now.join(' and ')} of ${count})`,
      async () => {
        now = [(await consumed(IN_MEMORY)) - before[0], (await consumed(IN_DATABASE)) - before[1]];
        return now.every((n) => n >= count);
      },
    );
  }

  const consumedNow = () => Promise.all([consumed(IN_MEMORY), consumed(IN_DATABASE)]);

  async function publishAndWait(event: PriceChanged): Promise<void> {
    const before = await consumedNow();
    await app.publisher.publishNow(event);
    await waitForConsumed(`version ${event.version} of ${event.sku}`, before, 1);
  }

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE prices (sku text PRIMARY KEY, cents int NOT NULL, version int NOT NULL)',
    ]);
    broker = await TestBroker.connect();
    registry = new Registry();
    app = await MessagingTestApp.start(broker, {
      providers: [InMemoryPrices, DatabasePrices],
      options: { dataSource: db.dataSource, metricsRegistry: registry },
    });
    inMemory = app.get(InMemoryPrices);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('discards an older and an equal version, applies newer ones, and counts each discard', async () => {
    for (const [version, cents] of [
      [1, 100],
      [3, 300],
      [2, 200],
      [3, 399],
      [4, 400],
    ]) {
      await publishAndWait(price('sku-1', version, cents));
    }

    expect(inMemory.prices.get('sku-1')).toEqual({ cents: 400, version: 4 });
    expect(await db.dataSource.query(`SELECT cents, version FROM prices WHERE sku = 'sku-1'`)).toEqual([
      { cents: 400, version: 4 },
    ]);
    expect(await discarded(IN_MEMORY)).toBe(2);
    expect(await discarded(IN_DATABASE)).toBe(2);
    for (const queue of [IN_MEMORY, IN_DATABASE]) {
      expect(await broker.queueDepth(queue)).toBe(0);
      expect(await broker.queueDepth(`${queue}.dlq`)).toBe(0);
    }
  });

  it('ends on the newest version whatever order the messages arrive in', async () => {
    const versions = [7, 3, 9, 1, 8, 2, 6, 5, 4, 10];
    const before = await consumedNow();
    const [memoryDiscards, databaseDiscards] = [await discarded(IN_MEMORY), await discarded(IN_DATABASE)];
    await Promise.all(versions.map((v) => app.publisher.publishNow(price('sku-2', v, v * 100))));
    await waitForConsumed('every version', before, versions.length);

    expect(inMemory.prices.get('sku-2')).toEqual({ cents: 1000, version: 10 });
    expect(await db.dataSource.query(`SELECT cents, version FROM prices WHERE sku = 'sku-2'`)).toEqual([
      { cents: 1000, version: 10 },
    ]);
    // Each message was either applied or counted as discarded; at least the ones arriving after version 10.
    expect(await discarded(IN_MEMORY)).toBeGreaterThan(memoryDiscards);
    expect(await discarded(IN_DATABASE)).toBeGreaterThan(databaseDiscards);
  });
});
