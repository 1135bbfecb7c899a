import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import { Registry, type Counter } from 'prom-client';
import {
  Consume,
  MessageType,
  STALE_MESSAGES_METRIC,
  VersionGuard,
  type MessageContext,
} from '@app/reliable-messaging';
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
  handled = 0;

  constructor(private readonly versions: VersionGuard) {}

  @Consume({ queue: IN_MEMORY, dedup: false })
  async onPriceChanged(event: PriceChanged, ctx: MessageContext): Promise<void> {
    this.handled++;
    if (this.versions.isStale(ctx, { current: this.prices.get(event.sku)?.version, incoming: event.version }))
      return;
    this.prices.set(event.sku, { cents: event.cents, version: event.version });
  }
}

/** Lets PostgreSQL compare versions in a conditional upsert, race-free under concurrent handlers. */
@Injectable()
class DatabasePrices {
  handled = 0;

  constructor(private readonly versions: VersionGuard) {}

  @Consume({ queue: IN_DATABASE })
  async onPriceChanged(event: PriceChanged, ctx: MessageContext): Promise<void> {
    this.handled++;
    const rows = (await ctx.manager!.query(
      'INSERT INTO prices (sku, cents, version) VALUES ($1, $2, $3) ' +
        'ON CONFLICT (sku) DO UPDATE SET cents = EXCLUDED.cents, version = EXCLUDED.version ' +
        'WHERE prices.version < EXCLUDED.version RETURNING 1',
      [event.sku, event.cents, event.version],
    )) as unknown[];
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
  let inDatabase: DatabasePrices;

  const price = (sku: string, version: number, cents: number): PriceChanged =>
    Object.assign(new PriceChanged(), { sku, version, cents });

  async function publishAndWait(event: PriceChanged): Promise<void> {
    const [memoryBefore, databaseBefore] = [inMemory.handled, inDatabase.handled];
    await app.publisher.publishNow(event);
    await waitFor(`version ${event.version} of ${event.sku} handled by both consumers`, () => {
      return inMemory.handled > memoryBefore && inDatabase.handled > databaseBefore;
    });
  }

  function discarded(queue: string): Promise<number> {
    const counter = registry.getSingleMetric(STALE_MESSAGES_METRIC) as Counter<'queue' | 'type'>;
    return counter
      .get()
      .then(
        ({ values }) =>
          values.find((v) => v.labels.queue === queue && v.labels.type === 'catalog.price-changed')?.value ??
          0,
      );
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
    inDatabase = app.get(DatabasePrices);
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
    const [memoryBefore, databaseBefore] = [inMemory.handled, inDatabase.handled];
    const [memoryDiscards, databaseDiscards] = [await discarded(IN_MEMORY), await discarded(IN_DATABASE)];
    await Promise.all(versions.map((v) => app.publisher.publishNow(price('sku-2', v, v * 100))));
    await waitFor('every version handled by both consumers', () => {
      return (
        inMemory.handled - memoryBefore === versions.length &&
        inDatabase.handled - databaseBefore === versions.length
      );
    });

    expect(inMemory.prices.get('sku-2')).toEqual({ cents: 1000, version: 10 });
    expect(await db.dataSource.query(`SELECT cents, version FROM prices WHERE sku = 'sku-2'`)).toEqual([
      { cents: 1000, version: 10 },
    ]);
    // Each message was either applied or counted as discarded; at least the ones arriving after version 10.
    expect(await discarded(IN_MEMORY)).toBeGreaterThan(memoryDiscards);
    expect(await discarded(IN_DATABASE)).toBeGreaterThan(databaseDiscards);
  });
});
