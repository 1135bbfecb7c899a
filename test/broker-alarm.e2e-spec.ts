import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { IsInt } from 'class-validator';
import { Registry } from 'prom-client';
import { Consume, MessageType } from 'nestjs-reliable-messaging';
import { MessagingHealth, ReliableMessagingHealthModule } from 'nestjs-reliable-messaging/health';
import { PublisherConnection } from 'nestjs-reliable-messaging/operations';
import { clearMemoryAlarm, withMemoryAlarm } from './support/broker-alarm';
import { MessagingTestApp, queueCounts, uniqueQueue, type QueueCounts } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'alarm.job-queued', idempotencyKey: (m: JobQueued) => `job:${m.n}` })
class JobQueued {
  @IsInt() n!: number;
}

const QUEUE = uniqueQueue('alarm');
const QUEUED_BEFORE = 20;
const CONCURRENCY = 5;
const DURING = 1000;
/** Shorter than the alarm lasts, so a confirm clock running while blocked would fail the publish. */
const CONFIRM_TIMEOUT_MS = 2_000;

/** Holds every job until the spec opens the gate, then succeeds: nothing it does publishes. */
@Injectable()
class JobHandler {
  readonly handled = new Set<number>();
  started = 0;
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.open = resolve));

  @Consume({ queue: QUEUE, concurrency: CONCURRENCY })
  async onJob(job: JobQueued): Promise<void> {
    this.started++;
    await this.gate;
    this.handled.add(job.n);
  }

  release(): void {
    this.open();
  }
}

/** What the spec saw while the memory alarm was on, asserted once the broker is back to normal. */
interface DuringAlarm {
  readiness: HealthCheckResult;
  blocked: { consume?: number; publish?: number };
  countsWhileBlocked: QueueCounts;
  handledWhileBlocked: number;
  publishSettledWhileBlocked: boolean;
  publisherStillBlocked: boolean;
}

describe('a memory alarm blocks publishing', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let jobs: JobHandler;
  const registry = new Registry();

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [JobHandler],
      imports: [ReliableMessagingHealthModule],
      options: { publishConfirmTimeoutMs: CONFIRM_TIMEOUT_MS, metricsRegistry: registry },
    });
    jobs = app.get(JobHandler);
  });

  afterAll(async () => {
    await clearMemoryAlarm();
    jobs?.release();
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('keeps consumers acknowledging, holds a publish until the alarm clears, and reports the publisher connection blocked', async () => {
    const publisherConnection = app.get(PublisherConnection);
    const readiness = (): Promise<HealthCheckResult> =>
      app.get(HealthCheckService).check(app.get(MessagingHealth).readiness());
    const blockedGauge = async (connection: string): Promise<number | undefined> =>
      (await registry.getSingleMetric('rm_broker_blocked')!.get()).values.find(
        (sample) => sample.labels.connection === connection,
      )?.value;
    for (let n = 0; n < QUEUED_BEFORE; n++)
      await app.publisher.publish(Object.assign(new JobQueued(), { n }));
    await waitFor(`${CONCURRENCY} jobs held in flight`, () => jobs.started === CONCURRENCY);

    let publishSettled = false;
    let publishing!: Promise<unknown>;
    const seen = await withMemoryAlarm(async (): Promise<DuringAlarm> => {
      publishing = app.publisher
        .publish(Object.assign(new JobQueued(), { n: DURING }))
        .finally(() => (publishSettled = true));
      await waitFor('the publisher connection blocked', () => publisherConnection.isBlocked);
      const blocked = { consume: await blockedGauge('consume'), publish: await blockedGauge('publish') };
      const health = await readiness();

      jobs.release();
      let counts!: QueueCounts;
      await waitFor(
        () =>
          `every queued job acknowledged (handled ${jobs.handled.size}, broker ${JSON.stringify(counts)})`,
        async () => {
          counts = await queueCounts(QUEUE);
          return jobs.handled.size >= QUEUED_BEFORE && counts.ready === 0 && counts.unacked === 0;
        },
        { timeoutMs: 8_000, intervalMs: 0 },
      );
      await waitFor(
        'the publish blocked for longer than its confirm timeout',
        () => publisherConnection.blockedMs > CONFIRM_TIMEOUT_MS + 500,
      );
      return {
        readiness: health,
        blocked,
        countsWhileBlocked: counts,
        handledWhileBlocked: jobs.handled.size,
        publishSettledWhileBlocked: publishSettled,
        publisherStillBlocked: publisherConnection.isBlocked,
      };
    });

    await expect(publishing).resolves.toBeDefined();
    await waitFor('the job published during the alarm handled', () => jobs.handled.has(DURING));

    // (a) the consumer connection went on acknowledging while the publisher connection was blocked
    expect(seen.publisherStillBlocked).toBe(true);
    expect(seen.handledWhileBlocked).toBeGreaterThanOrEqual(QUEUED_BEFORE);
    expect(seen.countsWhileBlocked).toMatchObject({ ready: 0, unacked: 0 });
    // (b) the publish made during the alarm waited, past its confirm timeout, and went out once it cleared
    expect(seen.publishSettledWhileBlocked).toBe(false);
    // (c) health and metrics showed which connection the broker blocked; the pod stayed ready
    expect(seen.readiness.status).toBe('degraded');
    expect(seen.readiness.details.broker).toEqual({
      status: 'degraded',
      consume: { connected: true, blocked: false },
      publish: { connected: true, blocked: true },
      message: 'the broker blocks the publish connection (a memory or disk alarm)',
    });
    expect(seen.blocked).toEqual({ consume: 0, publish: 1 });
    expect(await blockedGauge('publish')).toBe(0);
    expect(app.logger.find('warn', /^publisher connection: the broker blocks it/)).toHaveLength(1);
  });
});
