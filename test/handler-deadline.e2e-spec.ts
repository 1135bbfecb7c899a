import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import {
  Consume,
  HandlerDeadlineExceededError,
  MessageType,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'report.requested', idempotencyKey: (m: ReportRequested) => `report:${m.id}` })
class ReportRequested {
  @IsString() id!: string;
  /** What the handler does with it. */
  @IsString() mode!: 'slow-first-attempt' | 'extends';
}

@MessageType({ type: 'report.single', idempotencyKey: (m: SingleReport) => `single:${m.id}` })
class SingleReport {
  @IsString() id!: string;
  @IsString() mode!: 'ignores-signal' | 'quick';
}

const SLOW_QUEUE = uniqueQueue('deadline');
const SINGLE_QUEUE = uniqueQueue('deadline-single');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
class ReportHandler {
  readonly runs: Array<{
    id: string;
    attempt: number;
    outcome: 'done' | 'aborted';
    reason?: unknown;
    ms: number;
  }> = [];

  @Consume({ queue: SLOW_QUEUE, deadlineMs: 300, retry: { initialDelayMs: 10, maxDelayMs: 10 } })
  async onReport(event: ReportRequested, ctx: MessageContext): Promise<void> {
    const started = Date.now();
    try {
      if (event.mode === 'slow-first-attempt' && ctx.attempt === 1) await abortable(5_000, ctx.signal);
      if (event.mode === 'extends') {
        for (let step = 0; step < 8; step++) {
          await abortable(100, ctx.signal);
          ctx.extendDeadline(300);
        }
      }
      this.runs.push({ id: event.id, attempt: ctx.attempt, outcome: 'done', ms: Date.now() - started });
    } catch (error) {
      this.runs.push({
        id: event.id,
        attempt: ctx.attempt,
        outcome: 'aborted',
        reason: error,
        ms: Date.now() - started,
      });
      throw error;
    }
  }

  /** When each SingleReport run started and returned, epoch ms. */
  readonly spans: Array<{ id: string; startedAt: number; returnedAt?: number }> = [];

  @Consume({ queue: SINGLE_QUEUE, concurrency: 1, deadlineMs: 200, retry: { maxAttempts: 1 } })
  async onSingle(event: SingleReport, ctx: MessageContext): Promise<void> {
    const span: (typeof this.spans)[number] = { id: event.id, startedAt: Date.now() };
    this.spans.push(span);
    if (event.mode === 'ignores-signal') await sleep(1_500);
    span.returnedAt = Date.now();
    this.runs.push({ id: event.id, attempt: ctx.attempt, outcome: 'done', ms: 0 });
  }
}

async function abortable(ms: number, signal: AbortSignal): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    });
  });
}

/** Handler deadlines (the acknowledgement window) against the real broker. */
describe('handler deadline', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: ReportHandler;
  const registry = new Registry();

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [ReportHandler],
      options: { metricsRegistry: registry },
    });
    handler = app.get(ReportHandler);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  afterEach(() => {
    handler.runs.splice(0);
  });

  const runsOf = (id: string) => handler.runs.filter((run) => run.id === id);
  const counter = async (name: string, labels: Record<string, string>) =>
    (await registry.getSingleMetric(name)?.get())?.values.find((value) =>
      Object.entries(labels).every(([key, label]) => value.labels[key] === label),
    )?.value ?? 0;

  it('aborts a handler past its deadline, counts the attempt as failed and retries it', async () => {
    await app.publisher.publish(
      Object.assign(new ReportRequested(), { id: 'r1', mode: 'slow-first-attempt' }),
    );

    await waitFor(
      () => `a second attempt of r1 (${JSON.stringify(runsOf('r1'))})`,
      () => runsOf('r1').length === 2,
    );
    const [first, second] = runsOf('r1');
    expect(first).toMatchObject({ attempt: 1, outcome: 'aborted' });
    expect(first.reason).toBeInstanceOf(HandlerDeadlineExceededError);
    expect(first.ms).toBeGreaterThanOrEqual(290);
    expect(first.ms).toBeLessThan(1_000);
    expect(second).toMatchObject({ attempt: 2, outcome: 'done' });
    expect(await counter('rm_handler_deadline_exceeded_total', { queue: SLOW_QUEUE })).toBe(1);
  });

  it('lets a handler that extends its deadline run well past the first one, in a single attempt', async () => {
    await app.publisher.publish(Object.assign(new ReportRequested(), { id: 'r2', mode: 'extends' }));

    await waitFor(
      () => 'r2 done',
      () => runsOf('r2').some((run) => run.outcome === 'done'),
      { timeoutMs: 5_000 },
    );
    expect(runsOf('r2')).toEqual([{ id: 'r2', attempt: 1, outcome: 'done', ms: expect.any(Number) }]);
    expect(runsOf('r2')[0].ms).toBeGreaterThanOrEqual(750);
  });

  it('holds the slot of a handler that ignores its signal until it returns, settles it only then, and reports it overdue', async () => {
    const overdue = async () =>
      (await registry.getSingleMetric('rm_handlers_overdue')?.get())?.values.find(
        (value) => value.labels.queue === SINGLE_QUEUE,
      )?.value ?? 0;
    await app.publisher.publish(Object.assign(new SingleReport(), { id: 'stuck', mode: 'ignores-signal' }));
    await app.publisher.publish(Object.assign(new SingleReport(), { id: 'next', mode: 'quick' }));

    await waitFor('the deadline of the stuck handler to pass', async () => (await overdue()) === 1);
    const stuck = handler.spans.find((span) => span.id === 'stuck');
    expect(stuck?.returnedAt).toBeUndefined();
    expect(handler.spans.map((span) => span.id)).toEqual(['stuck']);

    await waitFor('next handled', () => runsOf('next').length === 1, { timeoutMs: 10_000 });
    const next = handler.spans.find((span) => span.id === 'next');
    // One slot: the next message starts only once the abandoned handler has really returned.
    expect(next!.startedAt).toBeGreaterThanOrEqual(stuck!.returnedAt!);
    expect(await overdue()).toBe(0);
    const [deadLetter] = await broker.waitForMessages(`${SINGLE_QUEUE}.dlq`, 1);
    const headers = deadLetter.properties.headers ?? {};
    expect(headers['rm-dead-letter-error-class']).toBe('HandlerDeadlineExceededError');
    // Settled after the handler returned, so nothing (a retry, a replay) could run beside it.
    expect(Date.parse(headers['rm-dead-letter-last-failure-at'] as string)).toBeGreaterThanOrEqual(
      stuck!.returnedAt!,
    );
    expect(
      app.logger.find('warn', /a handler returned \d+ ms after its deadline, holding its slot/),
    ).toHaveLength(1);
  });
});
