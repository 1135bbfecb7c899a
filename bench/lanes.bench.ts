import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import {
  Consume,
  HEADERS,
  MessagePublisher,
  ReliableMessagingModule,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import { BenchOrderPlaced, benchMessage, rawEnvelope } from './bench-message';
import {
  AMQP_URL,
  deleteByPrefix,
  percentile,
  rawConnection,
  uniquePrefix,
  type LatencyComparison,
  type Suite,
} from './harness';

/** Bulk messages queued before the urgent ones are published. */
const BULK = Number(process.env.BENCH_LANES_BULK ?? 50_000);
/** Urgent messages, published one every URGENT_INTERVAL_MS once the bulk backlog is queued. */
const URGENT = Number(process.env.BENCH_LANES_URGENT ?? 200);
const URGENT_INTERVAL_MS = 20;
/** How long the slow bulk handler works per message (it waits, as on a slow downstream call). */
const BULK_HANDLER_MS = Number(process.env.BENCH_LANES_BULK_MS ?? 50);
const URGENT_SLOTS = 10;
const BULK_SLOTS = 2;
/** How long to wait for the lanes consumer's urgent messages before the run fails. */
const URGENT_TIMEOUT_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What each consumer saw: when each urgent message was handled, and how many bulk messages it finished. */
class Tally {
  readonly urgentHandledAt = new Map<string, number>();
  bulkHandled = 0;

  async handle(message: BenchOrderPlaced, ctx: MessageContext): Promise<void> {
    if (ctx.envelope.headers[HEADERS.lane] === 'bulk') {
      await sleep(BULK_HANDLER_MS);
      this.bulkHandled++;
    } else {
      this.urgentHandledAt.set(message.orderId, performance.now());
    }
  }
}

/**
 * One app, two consumers of the same messages with the same handler: `lanes` has an urgent lane (10 slots) and a
 * bulk lane (2 slots); `single` is the same consumer without lanes, one queue with the lanes' 12 slots.
 */
function lanesApp(prefix: string, tallies: { lanes: Tally; single: Tally }): DynamicModule {
  @Injectable()
  class Receipts {
    @Consume({
      queue: `${prefix}.lanes`,
      queueType: 'classic',
      lanes: { urgent: { concurrency: URGENT_SLOTS }, bulk: { concurrency: BULK_SLOTS } },
    })
    async withLanes(message: BenchOrderPlaced, ctx: MessageContext): Promise<void> {
      await tallies.lanes.handle(message, ctx);
    }

    @Consume({ queue: `${prefix}.single`, queueType: 'classic', concurrency: URGENT_SLOTS + BULK_SLOTS })
    async withoutLanes(message: BenchOrderPlaced, ctx: MessageContext): Promise<void> {
      await tallies.single.handle(message, ctx);
    }
  }

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange: `${prefix}.events`,
        connectionName: `${prefix}.app`,
      }),
    ],
    providers: [Receipts],
  })
  class LanesBenchModule {}

  return { module: LanesBenchModule };
}

/** Publishes `count` bulk messages to the events exchange with a raw confirm channel (not measured). */
async function publishBulk(connection: ChannelModel, exchange: string, count: number): Promise<void> {
  const channel = await connection.createConfirmChannel();
  for (let n = 0; n < count; n++) {
    const { body, properties } = rawEnvelope(n);
    properties.headers = { ...(properties.headers as Record<string, unknown>), [HEADERS.lane]: 'bulk' };
    if (!channel.publish(exchange, 'bench.order-placed', body, properties))
      await new Promise((resolve) => channel.once('drain', resolve));
    if (n % 1000 === 999) await channel.waitForConfirms();
  }
  await channel.waitForConfirms();
  await channel.close();
}

async function measure(): Promise<LatencyComparison> {
  const prefix = uniquePrefix('lanes');
  const connection = await rawConnection(`${prefix}.raw`);
  const tallies = { lanes: new Tally(), single: new Tally() };
  const context = await NestFactory.createApplicationContext(lanesApp(prefix, tallies), {
    logger: ['error', 'warn'],
  });
  try {
    await publishBulk(connection, `${prefix}.events`, BULK);
    const probe = await connection.createChannel();
    const depth = async (queue: string): Promise<number> => (await probe.checkQueue(queue)).messageCount;

    const publisher = context.get(MessagePublisher);
    const sentAt = new Map<string, number>();
    const singleAhead: number[] = [];
    const singleBulkBefore = tallies.single.bulkHandled;
    const windowStart = performance.now();
    for (let i = 0; i < URGENT; i++) {
      const message = Object.assign(benchMessage(BULK + i), { orderId: `urgent-${i}` });
      singleAhead.push(await depth(`${prefix}.single`));
      sentAt.set(message.orderId, performance.now());
      await publisher.publishNow(message, { lane: 'urgent' });
      await sleep(URGENT_INTERVAL_MS);
    }
    const deadline = Date.now() + URGENT_TIMEOUT_MS;
    while (tallies.lanes.urgentHandledAt.size < URGENT) {
      if (Date.now() > deadline)
        throw new Error('the lanes consumer did not handle every urgent message in time');
      await sleep(10);
    }
    const windowSeconds = (performance.now() - windowStart) / 1000;
    const singleRate = (tallies.single.bulkHandled - singleBulkBefore) / windowSeconds;
    const singleHandledUrgent = tallies.single.urgentHandledAt.size;
    const bulkLeft = { lanes: await depth(`${prefix}.lanes.bulk`), single: await depth(`${prefix}.single`) };
    await probe.close();

    const lanesMs = [...sentAt].map(([id, sent]) => (tallies.lanes.urgentHandledAt.get(id) ?? NaN) - sent);
    // NOTE: without lanes an urgent message waits behind the whole backlog, minutes at this bulk rate; rather
    // than wait that long, each one's wait is estimated as the messages ahead of it over the measured bulk rate.
    const singleEstimateMs = singleAhead.map((ahead) => (ahead / singleRate) * 1000);
    console.log(
      `lanes: ${BULK} bulk messages queued (handler ${BULK_HANDLER_MS} ms, ${BULK_SLOTS} bulk + ${URGENT_SLOTS} urgent slots; ` +
        `one queue: ${URGENT_SLOTS + BULK_SLOTS} slots), then ${URGENT} urgent ones over ${windowSeconds.toFixed(1)} s\n` +
        `  with lanes:    urgent p50 ${percentile(lanesMs, 50).toFixed(1)} ms, p99 ${percentile(lanesMs, 99).toFixed(1)} ms (measured); ` +
        `${bulkLeft.lanes} bulk messages still queued\n` +
        `  without lanes: urgent p99 ${(percentile(singleEstimateMs, 99) / 1000).toFixed(0)} s (estimated: up to ` +
        `${Math.max(...singleAhead)} messages ahead ÷ ${singleRate.toFixed(0)} bulk msgs/s measured in the same window); ` +
        `${singleHandledUrgent} of ${URGENT} urgent handled during the window, ${bulkLeft.single} messages still queued`,
    );
    return {
      suite: 'lanes',
      scenario: `urgent behind ${BULK} bulk (baseline: one queue, estimated)`,
      baselineMs: singleEstimateMs,
      candidateMs: lanesMs,
      targets: { p50Ms: 50, p99Ms: 100 },
    };
  } finally {
    await context.close();
    await deleteByPrefix(connection, prefix, [
      `${prefix}.lanes.urgent`,
      `${prefix}.lanes.bulk`,
      `${prefix}.single`,
      `${prefix}.events`,
    ]);
    await connection.close();
  }
}

/**
 * Urgent messages published behind a backlog of slow bulk messages, handled by the same handler with lanes
 * and without (one queue), in the same run on the same messages (docs/lanes.md).
 */
export const lanesSuite: Suite = {
  name: 'lanes',
  async run() {
    return { comparisons: [], latencies: [await measure()] };
  },
};
