import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { Consume, MessageType } from '@app/reliable-messaging';
import { ConsumerRegistry } from '@app/reliable-messaging/operations';
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
  readonly kept: string[] = [];

  @Consume({ queue: KEEPS_UP })
  async onKeptUp(event: ParcelScanned): Promise<void> {
    this.kept.push(event.id);
  }

  @Consume({ queue: STALLED, concurrency: 1, prefetch: 1, deadlineMs: 120_000, retry: { maxDelayMs: 30_000 } })
  async onStalled(event: ParcelScanned): Promise<void> {
    await this.stalled.pass(event.id);
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

  /** The true age in seconds, now, of a message published with AMQP timestamp `timestamp`. */
  const truth = (timestamp: number) => (Date.now() - timestamp * 1000) / 1000;

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

  it('reads 0 once a consumer that keeps up has drained its queue, however old its messages were', async () => {
    await publishScan(KEEPS_UP, 'kept-1', 900);
    await waitFor('the old message handled', () => consumers.kept.includes('kept-1'));
    await waitFor('the age back to 0', async () => (await gauge(AGE, KEEPS_UP)) === 0);
  });

  it('gives the exact age of the delivery a stalled handler holds, while younger ones wait ready', async () => {
    const first = await publishScan(STALLED, 'stalled-1', 600);
    await publishScan(STALLED, 'stalled-2', 590);
    await publishScan(STALLED, 'stalled-3', 300);
    await waitFor('the first message held by its handler', () => consumers.stalled.started.length === 1);
    expect(consumers.stalled.started).toEqual(['stalled-1']);
    await waitFor('two messages ready behind it', async () => (await broker.queueDepth(STALLED)) === 2);

    // A reading is shared for up to 1 s, so the gauge may be that much behind the clock; never ahead.
    const age = (await gauge(AGE, STALLED))!;
    const expected = truth(first);
    expect(age).toBeGreaterThanOrEqual(expected - 1.05);
    expect(age).toBeLessThanOrEqual(expected + 0.05);
  });

  it('bounds the ready messages of a stopped consumer from the last one it took: too high by the publish gap at most', async () => {
    const registryOfConsumers = app.get(ConsumerRegistry);
    const stopped = registryOfConsumers.stopAll(Date.now() + 30_000);
    await waitFor('the stalled consumer cancelled', () =>
      registryOfConsumers.statuses.every((status) => !status.consuming),
    );
    consumers.stalled.release('stalled-1');
    await stopped;
    expect(registryOfConsumers.statuses.find((status) => status.queue === STALLED)?.inFlight).toBe(0);
    await waitFor('two messages left ready', async () => (await broker.queueDepth(STALLED)) === 2);

    // The oldest message now is stalled-2, published 590 s ago; the last one taken, stalled-1, 10 s before it.
    const trueOldest = Math.floor(Date.now() / 1000) - 590;
    const age = (await gauge(AGE, STALLED))!;
    expect(age).toBeGreaterThanOrEqual(truth(trueOldest) - 1.05);
    expect(age).toBeLessThanOrEqual(truth(trueOldest) + 10 + 0.05);
  });

  it('bounds a queue with no consumer from the last reading that found it empty', async () => {
    expect(app.get(ConsumerRegistry).statuses.find((status) => status.queue === IDLE)?.consuming).toBe(false);
    const lastEmptyReadingFrom = Date.now();
    expect(await gauge(AGE, IDLE)).toBe(0);
    const published = await publishScan(IDLE, 'idle-1', 0);
    const publishedBy = Date.now();

    await waitFor(
      'the message seen waiting 2 s',
      async () => ((await gauge(AGE, IDLE)) ?? 0) >= 2,
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    const age = (await gauge(AGE, IDLE))!;
    // The empty reading may be one shared from up to 1 s before it was asked for; the timestamp's whole
    // seconds put the truth up to 1 s ahead of the real publish.
    expect(age).toBeGreaterThanOrEqual(truth(published) - 1 - 1.05);
    expect(age).toBeLessThanOrEqual(truth(published) + (publishedBy - lastEmptyReadingFrom) / 1000 + 1 + 0.05);
    expect(await broker.queueDepth(IDLE)).toBe(1);
  });
});
