import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { Consume, MessageType } from 'nestjs-reliable-messaging';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const TYPE = 'age.parcel-scanned';
const AGE = 'rm_queue_oldest_message_age_seconds';
const LIMIT = 'rm_consumer_age_limit_seconds';

@MessageType({ type: TYPE, idempotencyKey: (m: ParcelScanned) => m.id })
class ParcelScanned {
  @IsString() id!: string;
}

const KEEPS_UP = uniqueQueue('age-keeps-up');
const STALLED = uniqueQueue('age-stalled');
const TAKEN = uniqueQueue('age-taken');
const IDLE = uniqueQueue('age-idle');
const LANED = uniqueQueue('age-laned');

/** Handlers of one queue: each run waits until the test releases its message. */
class Gate {
  readonly started: string[] = [];
  private readonly waiting = new Map<string, () => void>();

  async pass(id: string): Promise<void> {
    this.started.push(id);
    await new Promise<void>((resolve) => this.waiting.set(id, resolve));
  }

  release(id: string): void {
    this.waiting.get(id)?.();
  }

  releaseAll(): void {
    for (const resolve of this.waiting.values()) resolve();
  }
}

@Injectable()
class ScanConsumers {
  readonly stalled = new Gate();
  readonly taken = new Gate();
  readonly keptUp = new Gate();

  @Consume({ queue: KEEPS_UP })
  async onKeptUp(event: ParcelScanned): Promise<void> {
    await this.keptUp.pass(event.id);
  }

  @Consume({
    queue: STALLED,
    concurrency: 1,
    prefetch: 1,
    deadlineMs: 120_000,
    retry: { maxDelayMs: 30_000 },
  })
  async onStalled(event: ParcelScanned): Promise<void> {
    await this.stalled.pass(event.id);
  }

  @Consume({ queue: TAKEN, concurrency: 1, prefetch: 1 })
  async onTaken(event: ParcelScanned): Promise<void> {
    await this.taken.pass(event.id);
  }

  @Consume({ queue: IDLE })
  async onIdle(_event: ParcelScanned): Promise<void> {}

  @Consume({ queue: LANED, lanes: { live: {}, backfill: {} } })
  async onLaned(_event: ParcelScanned): Promise<void> {}
}

/**
 * rm_queue_oldest_message_age_seconds against the truth on the real broker: messages published straight to the
 * queues with AMQP timestamps set in the past, a handler held on a promise the test releases, and queues whose
 * consumer has stopped. The truth is each message's age from the timestamp it was published with (whole
 * seconds); the bounds asserted are the ones docs/operations.md documents.
 */
describe('oldest-message age of consumer queues', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  const registry = new Registry();
  let consumers: ScanConsumers;

  /** The gauge's value for `queue`; undefined when it has no series for it. */
  async function gauge(name: string, queue: string): Promise<number | undefined> {
    const metric = registry.getSingleMetric(name);
    if (!metric) throw new Error(`${name} is not registered`);
    return (await metric.get()).values.find((sample) => sample.labels.queue === queue)?.value;
  }

  /** Publishes a scan to `queue` directly, timestamped `agoSeconds` before now; resolves with the timestamp. */
  async function publishScan(queue: string, id: string, agoSeconds: number): Promise<number> {
    const timestamp = Math.floor(Date.now() / 1000) - agoSeconds;
    await broker.publishRaw({ queue }, JSON.stringify({ id }), {
      type: TYPE,
      messageId: randomUUID(),
      contentType: 'application/json',
      timestamp,
      persistent: true,
    });
    return timestamp;
  }

  /** The true age in seconds, at epoch ms `at`, of a message published with AMQP timestamp `timestamp`. */
  const ageAt = (at: number, timestamp: number) => at / 1000 - timestamp;

  /**
   * A reading of the age gauge and the window it was asked for in: the broker reading behind it is shared for up
   * to SHARED_MS, so it was taken between `from - SHARED_MS` and `to`.
   */
  interface AgeRead {
    age: number;
    from: number;
    to: number;
  }
  const SHARED_MS = 1000;

  /** Reads `queue`'s age until `accept` takes a reading, and returns that reading. */
  async function readAge(
    description: string,
    queue: string,
    accept: (read: AgeRead) => boolean,
    options?: { timeoutMs?: number; intervalMs?: number },
  ): Promise<AgeRead> {
    let read: AgeRead = { age: 0, from: 0, to: 0 };
    await waitFor(
      description,
      async () => {
        const from = Date.now();
        const age = (await gauge(AGE, queue)) ?? 0;
        read = { age, from, to: Date.now() };
        return accept(read);
      },
      options,
    );
    return read;
  }

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [ScanConsumers],
      options: { metricsRegistry: registry },
    });
    consumers = app.get(ScanConsumers);
  });

  afterAll(async () => {
    consumers?.stalled.releaseAll();
    consumers?.taken.releaseAll();
    consumers?.keptUp.releaseAll();
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('exports the age and the age limit for every queue consumed, lanes included', async () => {
    const queues = app.get(ConsumerRegistry).consumers.map((consumer) => consumer.queue);
    expect(queues).toEqual(expect.arrayContaining([`${LANED}.live`, `${LANED}.backfill`]));
    for (const queue of queues) {
      expect({ queue, age: await gauge(AGE, queue) }).toEqual({ queue, age: 0 });
      expect({ queue, limit: await gauge(LIMIT, queue) }).toEqual({ queue, limit: expect.any(Number) });
    }
    // 120 s deadline plus a 30 s backoff cap.
    expect(await gauge(LIMIT, STALLED)).toBe(150);
  });

  it('falls back to 0 once its consumer has handled the oldest message, however old it was', async () => {
    await publishScan(KEEPS_UP, 'kept-1', 900);
    await waitFor('the old message held', () => consumers.keptUp.started.includes('kept-1'));
    await waitFor('the old message seen', async () => ((await gauge(AGE, KEEPS_UP)) ?? 0) >= 900);
    consumers.keptUp.release('kept-1');
    await waitFor('the age back to 0', async () => (await gauge(AGE, KEEPS_UP)) === 0);
  });

  /** When the reading that first found messages ready in STALLED was asked for, and when it answered. */
  const stalledSeen = { from: 0, by: 0 };

  it('gives the exact age of the delivery a stalled handler holds, while younger ones wait ready', async () => {
    const first = await publishScan(STALLED, 'stalled-1', 600);
    await publishScan(STALLED, 'stalled-2', 590);
    await publishScan(STALLED, 'stalled-3', 300);
    await waitFor('the first message held by its handler', () => consumers.stalled.started.length === 1);
    expect(consumers.stalled.started).toEqual(['stalled-1']);
    await waitFor('two messages ready behind it', async () => (await broker.queueDepth(STALLED)) === 2);

    stalledSeen.from = Date.now();
    const seen = await readAge('a reading that sees the held message', STALLED, (read) => read.age > 0);
    stalledSeen.by = seen.to;
    // Exact at the time of its reading, which is shared for up to SHARED_MS: never ahead of the clock.
    expect(seen.age).toBeGreaterThanOrEqual(ageAt(seen.from - SHARED_MS, first) - 0.05);
    expect(seen.age).toBeLessThanOrEqual(ageAt(seen.to, first) + 0.05);
  });

  it('counts the ready messages of a consumer that stopped after taking one from that one: too high by the publish gap at most', async () => {
    await publishScan(TAKEN, 'taken-1', 600);
    const trueOldest = await publishScan(TAKEN, 'taken-2', 590);
    await publishScan(TAKEN, 'taken-3', 300);
    // No reading until the consumer has stopped: it took taken-1 since the previous one.
    await waitFor('the first message taken', () => consumers.taken.started.length === 1);
    const consumerRegistry = app.get(ConsumerRegistry);
    const stopped = consumerRegistry.stopAll(Date.now() + 30_000);
    await waitFor('every consumer cancelled', () =>
      consumerRegistry.statuses.every((status) => !status.consuming),
    );
    consumers.taken.release('taken-1');
    consumers.stalled.release('stalled-1');
    await stopped;
    expect(consumerRegistry.statuses.map((status) => status.inFlight)).toEqual(
      consumerRegistry.statuses.map(() => 0),
    );
    expect(await broker.queueDepth(TAKEN)).toBe(2);

    const seen = await readAge('a reading of the stopped queue', TAKEN, (read) => read.age > 0);
    // The oldest message now is taken-2; the last one taken, taken-1, was published 10 s before it.
    expect(seen.age).toBeGreaterThanOrEqual(ageAt(seen.from - SHARED_MS, trueOldest) - 0.05);
    expect(seen.age).toBeLessThanOrEqual(ageAt(seen.to, trueOldest) + 10 + 0.05);
  });

  it('bounds a queue nobody consumes from below by the time since it was first seen with messages ready', async () => {
    await waitFor('the broker to count no consumer on the stalled queue', async () => {
      return (await broker.checkQueue(STALLED)).consumerCount === 0;
    });
    // stalled-2 (590 s old) heads the queue; it was first seen ready by the stalled handler's reading.
    const trueOldest = Math.floor(stalledSeen.from / 1000) - 590;
    // The first reading that found it ready was taken between stalledSeen.from and stalledSeen.by.
    const seen = await readAge(
      'a reading since the consumer count fell to 0',
      STALLED,
      (read) => read.age >= (read.from - SHARED_MS - stalledSeen.by) / 1000 - 0.05,
    );
    expect(seen.age).toBeLessThanOrEqual((seen.to - stalledSeen.from) / 1000 + 0.05);
    expect(seen.age).toBeLessThan(ageAt(seen.from - SHARED_MS, trueOldest));
  });

  it('bounds a queue nobody consumes from the first reading that found its message, when it was empty before', async () => {
    await waitFor('the broker to count no consumer on the idle queue', async () => {
      return (await broker.checkQueue(IDLE)).consumerCount === 0;
    });
    await waitFor('a reading that finds it empty', async () => (await gauge(AGE, IDLE)) === 0);
    const published = await publishScan(IDLE, 'idle-1', 0);

    const seen = await readAge('the message seen waiting 2 s', IDLE, (read) => read.age >= 2, {
      timeoutMs: 15_000,
      intervalMs: 200,
    });
    // Too low by the wait before the first reading that found it (the empty reading before it was shared for
    // 1 s at most, and polled every 200 ms), never too high; the timestamp's whole seconds put the truth up to
    // 1 s ahead of the publish.
    expect(seen.age).toBeLessThanOrEqual(ageAt(seen.to, published) + 0.05);
    expect(seen.age).toBeGreaterThanOrEqual(ageAt(seen.from - SHARED_MS, published) - 1 - 1.2);
    expect(await broker.queueDepth(IDLE)).toBe(1);
  });
});
