import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsIn, IsString } from 'class-validator';
import {
  Consume,
  HEADERS,
  type MessageContext,
  MessageType,
  NonRetryableError,
} from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

type Mode = 'transient' | 'always' | 'declined' | 'out-of-stock' | 'fraud' | 'refused';

@MessageType({ type: 'retry.job', idempotencyKey: (m: Job) => `job:${m.id}` })
class Job {
  @IsString() id!: string;
  @IsIn(['transient', 'always', 'declined', 'out-of-stock', 'fraud', 'refused']) mode!: Mode;
}

class PaymentDeclined extends Error {}
class OutOfStock extends Error {}
class FraudSuspected extends Error {}
class OrderRefused extends NonRetryableError {}

const QUEUE = uniqueQueue('retry');
const SUCCEED_ON = 3;
const MAX_ATTEMPTS = 5;
const INITIAL_DELAY_MS = 200;
const MAX_DELAY_MS = 10_000;
/**
 * Rounding to the 100 ms resolution, one hop per delay level, and the consumer's own turnaround, on a 2-core
 * machine running the rest of the suite (a full run saw 246 ms); below the ceilings from the third attempt on, so a
 * delay that went to a level twice too long fails.
 */
const TIMING_TOLERANCE_MS = 400;

@Injectable()
class JobHandler {
  readonly attempts: Array<{ id: string; attempt: number; at: number; redelivered: boolean }> = [];

  // NOTE: a classic queue, whose counts rabbitmqctl and checkQueue report at once (a quorum queue's lag).
  @Consume({
    queue: QUEUE,
    queueType: 'classic',
    concurrency: 20,
    retry: { nonRetryableErrors: [OutOfStock], isRetryable: (error) => !(error instanceof FraudSuspected) },
  })
  async onJob(job: Job, ctx: MessageContext): Promise<void> {
    this.attempts.push({ id: job.id, attempt: ctx.attempt, at: Date.now(), redelivered: ctx.redelivered });
    if (job.mode === 'transient' && ctx.attempt < SUCCEED_ON)
      throw new Error(`flaky dependency (attempt ${ctx.attempt})`);
    if (job.mode === 'always') throw new Error('still failing');
    if (job.mode === 'declined') throw new PaymentDeclined('card declined');
    if (job.mode === 'out-of-stock') throw new OutOfStock('no stock left');
    if (job.mode === 'fraud') throw new FraudSuspected('fraud check failed');
    if (job.mode === 'refused') throw new OrderRefused('order refused');
  }

  of(id: string): Array<{ attempt: number; at: number; redelivered: boolean }> {
    return this.attempts.filter((a) => a.id === id);
  }
}

function job(id: string, mode: Mode): Job {
  return Object.assign(new Job(), { id, mode });
}

describe('retries with backoff and jitter through the delay levels', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: JobHandler;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [JobHandler],
      options: {
        retry: {
          maxAttempts: MAX_ATTEMPTS,
          initialDelayMs: INITIAL_DELAY_MS,
          maxDelayMs: MAX_DELAY_MS,
          nonRetryableErrors: [PaymentDeclined],
        },
      },
    });
    handler = app.get(JobHandler);
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it(`handles a transient failure on attempt ${SUCCEED_ON}, counting attempts in the message's own headers`, async () => {
    await app.publisher.publish(job('t-1', 'transient'));

    await waitFor('the third attempt', () => handler.of('t-1').length === SUCCEED_ON, { timeoutMs: 5_000 });
    expect(handler.of('t-1').map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(handler.of('t-1').every((a) => !a.redelivered)).toBe(true);
    await waitFor('the queue to settle', async () => (await broker.queueDepth(QUEUE)) === 0);
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(0);
  });

  it('waits a full-jitter delay below a doubling ceiling before each attempt, and dead-letters after exactly maxAttempts', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `j-${i}`);
    for (const id of ids) await app.publisher.publish(job(id, 'always'));

    const deadLetters = await broker.waitForMessages(`${QUEUE}.dlq`, ids.length, 15_000);

    const scheduled = app.logger
      .find(
        'warn',
        /^JobHandler\.onJob failed on message .* \(attempt \d\): still failing; attempt \d in \d+ ms$/,
      )
      .map((line) => {
        const [, attempt, delay] = /\(attempt (\d)\).* in (\d+) ms$/.exec(line.message) as RegExpExecArray;
        return { attempt: Number(attempt), delay: Number(delay) };
      });
    const gaps: number[][] = [[], [], [], [], [], []];
    for (const id of ids) {
      const attempts = handler.of(id);
      expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5]);
      for (let n = 1; n < MAX_ATTEMPTS; n++) gaps[n].push(attempts[n].at - attempts[n - 1].at);
    }
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      const ceiling = INITIAL_DELAY_MS * 2 ** (n - 1);
      const delays = scheduled.filter((s) => s.attempt === n).map((s) => s.delay);
      expect(delays).toHaveLength(ids.length);
      // Each drawn delay lies under its ceiling, and what the handler saw matches what was drawn.
      expect(Math.max(...delays)).toBeLessThanOrEqual(ceiling);
      expect(Math.min(...gaps[n])).toBeGreaterThanOrEqual(0);
      expect(Math.max(...gaps[n])).toBeLessThanOrEqual(ceiling + TIMING_TOLERANCE_MS);
      // Full jitter spreads the delays over their range rather than repeating one value.
      expect(new Set(delays).size).toBeGreaterThan(1);
    }
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    expect(mean(gaps[4])).toBeGreaterThan(mean(gaps[1]) + INITIAL_DELAY_MS);
    expect(Math.max(...gaps[4]) - Math.min(...gaps[4])).toBeGreaterThan(INITIAL_DELAY_MS);

    expect(deadLetters).toHaveLength(ids.length);
    for (const message of deadLetters) {
      const headers = message.properties.headers ?? {};
      expect(headers).toMatchObject({
        [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
        [DEAD_LETTER_HEADERS.attempts]: MAX_ATTEMPTS,
        [DEAD_LETTER_HEADERS.errorClass]: 'Error',
        [DEAD_LETTER_HEADERS.errorMessage]: 'still failing',
        [DEAD_LETTER_HEADERS.queue]: QUEUE,
        [DEAD_LETTER_HEADERS.exchange]: `${broker.prefix}.events`,
        [DEAD_LETTER_HEADERS.routingKey]: 'retry.job',
        [DEAD_LETTER_HEADERS.count]: 1,
        [HEADERS.attempt]: MAX_ATTEMPTS,
      });
      expect(Date.parse(headers[DEAD_LETTER_HEADERS.firstFailureAt] as string)).toBeLessThan(
        Date.parse(headers[DEAD_LETTER_HEADERS.lastFailureAt] as string),
      );
      expect(headers['x-death']).toBeUndefined();
    }
  });

  it.each([
    ['a NonRetryableError subclass', 'refused', 'OrderRefused'],
    ['an error class listed module-wide', 'declined', 'PaymentDeclined'],
    ['an error class listed on the consumer', 'out-of-stock', 'OutOfStock'],
    ["an error the consumer's predicate refuses", 'fraud', 'FraudSuspected'],
  ] as const)('dead-letters %s after one attempt', async (_what, mode, errorClass) => {
    const id = `nr-${mode}`;
    await app.publisher.publish(job(id, mode));

    const [deadLetter] = await broker.waitForMessages(`${QUEUE}.dlq`, 1, 5_000);
    expect(handler.of(id).map((a) => a.attempt)).toEqual([1]);
    expect(deadLetter.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'non-retryable',
      [DEAD_LETTER_HEADERS.errorClass]: errorClass,
      [DEAD_LETTER_HEADERS.attempts]: 1,
      [DEAD_LETTER_HEADERS.handler]: 'JobHandler.onJob',
    });
    expect(deadLetter.properties.headers?.[DEAD_LETTER_HEADERS.errorStack]).toMatch(
      /\n\s+at .*retry\.e2e-spec/,
    );
  });
});
