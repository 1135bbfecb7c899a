import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import type { DataSource } from 'typeorm';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { InboxStats } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The same business event (one idempotency key) can carry any ordering key, so copies spread over partitions. */
@MessageType({
  type: 'fixture.parcel-routed',
  idempotencyKey: (m: ParcelRouted) => `routed:${m.parcelId}`,
  orderingKey: (m: ParcelRouted) => m.route,
})
class ParcelRouted {
  @IsString() parcelId!: string;
  @IsString() route!: string;
}

const ROUTING = uniqueQueue('routing');
const PARTITIONS = 4;
const COPIES = 20;

@Injectable()
class RoutingHandler {
  readonly handledOn: string[] = [];

  @Consume({ queue: ROUTING, ordering: { by: 'key', partitions: PARTITIONS } })
  async onRouted(event: ParcelRouted, ctx: MessageContext): Promise<void> {
    await ctx.manager?.query('INSERT INTO effects (parcel_id) VALUES ($1)', [event.parcelId]);
    this.handledOn.push(ctx.queue);
  }
}

/**
 * A key-ordered consumer's partitions deduplicate as one consumer: when the partition count changes, a key's
 * messages move to another partition, and a copy arriving there must still be recognised. Copies of one event
 * under twenty ordering keys land on several partitions; the effect is applied once.
 */
describe('ordering by key: the partitions share one inbox', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE effects (id serial PRIMARY KEY, parcel_id text NOT NULL)',
    ]);
    broker = await TestBroker.connect();
    dataSource = await db.connect();
    app = await MessagingTestApp.start(broker, { providers: [RoutingHandler], options: { dataSource } });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('applies copies of one idempotency key once, whichever partitions they arrive on', async () => {
    for (let copy = 0; copy < COPIES; copy++) {
      await app.publisher.publishNow(
        Object.assign(new ParcelRouted(), { parcelId: 'p-1', route: `route-${copy}` }),
      );
    }
    const handler = app.get(RoutingHandler);
    const stats = app.get(InboxStats);
    const partitionQueues = Array.from(
      { length: PARTITIONS },
      (_, p) => `${ROUTING}.p${String(p).padStart(3, '0')}`,
    );
    await waitFor(
      () =>
        `${COPIES} copies handled or skipped (handled ${handler.handledOn.length}, skipped ${stats.duplicates})`,
      () => handler.handledOn.length + stats.duplicates === COPIES,
    );

    const reached = new Set([
      ...handler.handledOn,
      ...partitionQueues.filter((queue) => stats.duplicatesOf(queue) > 0),
    ]);
    expect(reached.size).toBeGreaterThan(1);
    expect(handler.handledOn).toHaveLength(1);
    expect(await dataSource.query('SELECT count(*)::int AS n FROM effects')).toEqual([{ n: 1 }]);
    expect(await dataSource.query('SELECT consumer FROM rm_inbox')).toEqual([{ consumer: ROUTING }]);
  });
});
