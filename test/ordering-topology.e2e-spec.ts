import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsOptional, IsString } from 'class-validator';
import { ConfigurationError, Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { keyExchangeName, orderingBucket } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({
  type: 'shipment.moved',
  idempotencyKey: (m: ShipmentMoved) => `moved:${m.shipment ?? 'none'}:${m.seq}`,
  orderingKey: (m: ShipmentMoved) => m.shipment as string,
})
class ShipmentMoved {
  @IsOptional() @IsString() shipment?: string;
  @IsInt() seq!: number;
}

const KEYED = uniqueQueue('tracking');
const SINGLE = uniqueQueue('audit');
const PARTITIONS = 4;

@Injectable()
class TrackingHandler {
  readonly seen: Array<{ shipment?: string; seq: number; queue: string }> = [];

  @Consume({ queue: KEYED, ordering: { by: 'key', partitions: PARTITIONS }, concurrency: 5 })
  async onMoved(event: ShipmentMoved, ctx: MessageContext): Promise<void> {
    this.seen.push({ shipment: event.shipment, seq: event.seq, queue: ctx.queue });
  }

  partitionsOf(shipment: string | undefined): Set<string> {
    return new Set(this.seen.filter((s) => s.shipment === shipment).map((s) => s.queue));
  }
}

@Injectable()
class AuditHandler {
  readonly seen: number[] = [];

  @Consume({ queue: SINGLE, ordering: 'queue', messageTypes: ['shipment.moved'] })
  async onMoved(event: ShipmentMoved): Promise<void> {
    this.seen.push(event.seq);
  }
}

const SHIPMENTS = Array.from({ length: 12 }, (_, i) => `shipment-${i}`);
const moved = (shipment: string | undefined, seq: number): ShipmentMoved =>
  Object.assign(new ShipmentMoved(), { shipment, seq });

/**
 * What the ordering options declare on the broker, checked through what the broker does with it: a key-ordered
 * consumer's key exchange puts each key on partition `bucket(key) mod N` (also after the app restarts, and after
 * a partition queue is deleted and declared again), spreads messages without a key of their own, hands a message
 * without a bucket to partition 0, and refuses a lower partition count; an ordering 'queue' consumer's queue
 * delivers to one replica only.
 */
describe('ordering: the topology behind ordering options', () => {
  let broker: TestBroker;
  let first: MessagingTestApp;

  async function publishAll(app: MessagingTestApp, from: number): Promise<void> {
    for (const shipment of SHIPMENTS) await app.publisher.publish(moved(shipment, from));
  }

  beforeAll(async () => {
    broker = await TestBroker.connect();
    first = await MessagingTestApp.start(broker, { providers: [TrackingHandler, AuditHandler] });
  });

  afterAll(async () => {
    await first?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('says at startup that an ordered consumer ignores the concurrency it asked for', () => {
    expect(
      first.logger.find('warn', /TrackingHandler\.onMoved: ordering by key .* concurrency 5 is ignored/),
    ).toHaveLength(1);
  });

  it('routes every message of a key to one partition, and keys to several partitions', async () => {
    const tracking = first.get(TrackingHandler);
    await publishAll(first, 1);
    await publishAll(first, 2);
    await waitFor('24 messages handled', () => tracking.seen.length === 24);

    for (const shipment of SHIPMENTS) {
      expect([...tracking.partitionsOf(shipment)]).toEqual([
        `${KEYED}.p00${orderingBucket(shipment) % PARTITIONS}`,
      ]);
    }
    expect(new Set(tracking.seen.map((s) => s.queue)).size).toBeGreaterThan(1);
  });

  it('hands a message that carries no bucket (a plain AMQP client) to partition 0, and handles it', async () => {
    const tracking = first.get(TrackingHandler);
    const before = tracking.seen.length;
    await broker.publishRaw(
      { exchange: broker.name('events'), routingKey: 'shipment.moved' },
      JSON.stringify({ shipment: 'plain-client', seq: 7 }),
      {
        messageId: 'plain-client-1',
        contentType: 'application/json',
        type: 'shipment.moved',
        headers: { 'rm-ordering-key': 'plain-client' },
      },
    );
    await waitFor('the plain client message handled', () => tracking.seen.length === before + 1);

    expect([...tracking.partitionsOf('plain-client')]).toEqual([`${KEYED}.p000`]);
  });

  it('spreads messages without an ordering key over the partitions by their message id', async () => {
    const tracking = first.get(TrackingHandler);
    const before = tracking.seen.length;
    for (let seq = 1; seq <= 24; seq++) await first.publisher.publish(moved(undefined, seq));
    await waitFor('24 keyless messages handled', () => tracking.seen.length === before + 24);

    expect(tracking.partitionsOf(undefined).size).toBeGreaterThan(1);
  });

  it("delivers an ordering 'queue' consumer's messages to one replica only", async () => {
    const second = await MessagingTestApp.start(broker, { providers: [TrackingHandler, AuditHandler] });
    try {
      // NOTE: a quorum queue reports its consumer count with a lag.
      await waitFor('both replicas subscribed', async () => (await queueCounts(SINGLE)).consumers === 2);
      const [one, two] = [first.get(AuditHandler), second.get(AuditHandler)];
      // The audit queue got every message published so far (49, from the cases above, which waited for the
      // tracking queue only): it drains them first, or they would count among the 12 awaited here.
      const earlier = 2 * SHIPMENTS.length + 1 + 24;
      await waitFor(`the ${earlier} earlier audit messages`, () => one.seen.length === earlier);
      await publishAll(second, 3);
      await waitFor('12 more audit messages', () => one.seen.length + two.seen.length === earlier + 12);

      expect(two.seen).toEqual([]);
      expect(one.seen.slice(-12)).toEqual(Array(12).fill(3));
    } finally {
      await second.close();
    }
  });

  it('keeps each key on its partition when the app starts again', async () => {
    const before = new Map(SHIPMENTS.map((s) => [s, [...first.get(TrackingHandler).partitionsOf(s)][0]]));
    await first.close();
    first = await MessagingTestApp.start(broker, { providers: [TrackingHandler, AuditHandler] });
    const tracking = first.get(TrackingHandler);
    await publishAll(first, 4);
    await waitFor('12 messages handled after the restart', () => tracking.seen.length === 12);

    for (const shipment of SHIPMENTS)
      expect([...tracking.partitionsOf(shipment)]).toEqual([before.get(shipment)]);
  });

  it('keeps each key on its partition when a partition queue is deleted and declared again', async () => {
    const tracking = first.get(TrackingHandler);
    const before = new Map(SHIPMENTS.map((s) => [s, [...tracking.partitionsOf(s)][0]]));
    await first.close();
    await (await broker.openChannel()).deleteQueue(`${KEYED}.p001`);
    first = await MessagingTestApp.start(broker, { providers: [TrackingHandler, AuditHandler] });
    const again = first.get(TrackingHandler);
    await publishAll(first, 5);
    await waitFor('12 messages handled after the partition came back', () => again.seen.length === 12);

    for (const shipment of SHIPMENTS)
      expect([...again.partitionsOf(shipment)]).toEqual([before.get(shipment)]);
  });

  it('grows to more partitions: the key exchange of the old count goes, and no message arrives twice', async () => {
    @Injectable()
    class MorePartitions {
      readonly seen: Array<{ shipment?: string; queue: string }> = [];

      @Consume({ queue: KEYED, ordering: { by: 'key', partitions: 6 } })
      async onMoved(event: ShipmentMoved, ctx: MessageContext): Promise<void> {
        this.seen.push({ shipment: event.shipment, queue: ctx.queue });
      }
    }
    await first.close();
    first = await MessagingTestApp.start(broker, { providers: [MorePartitions] });
    try {
      const more = first.get(MorePartitions);
      await publishAll(first, 6);
      await waitFor('12 messages handled with 6 partitions', () => more.seen.length === 12);

      for (const shipment of SHIPMENTS) {
        expect(more.seen.filter((s) => s.shipment === shipment).map((s) => s.queue)).toEqual([
          `${KEYED}.p00${orderingBucket(shipment) % 6}`,
        ]);
      }
      const channel = await broker.openChannel();
      await expect(channel.checkExchange(keyExchangeName(KEYED, PARTITIONS))).rejects.toThrow(/NOT_FOUND/);
    } finally {
      await first.close();
      // Back to 4 partitions for the case below: the broker now has 6.
      first = await MessagingTestApp.start(broker, { providers: [AuditHandler] });
    }
  });

  it('refuses to start with fewer partitions than the broker has, naming the partition left over', async () => {
    @Injectable()
    class FewerPartitions {
      @Consume({ queue: KEYED, ordering: { by: 'key', partitions: 2 } })
      async onMoved(_event: ShipmentMoved): Promise<void> {}
    }

    const { error } = await MessagingTestApp.startFailing(broker, { providers: [FewerPartitions] });

    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toContain(
      `declares 2 partitions of '${KEYED}', but the broker has more ('${KEYED}.p002' exists)`,
    );
  });
});
