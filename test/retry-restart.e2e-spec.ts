import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HEADERS } from 'nestjs-reliable-messaging';
import { delayLevelNames } from 'nestjs-reliable-messaging/operations';
import { ChildApp } from './support/child-app';
import { queueCounts } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/retry-app.js`;
/** Long enough that the kill, which waits for the broker's counts, lands well inside the wait on a busy machine. */
const INITIAL_DELAY_MS = 8000;
/** The fixture's fixed jitter draw: the first retry waits 4000 + 0.99 × 4000 ms, rounded to 8000 ms. */
const RANDOM = 0.99;
const RETRY_DELAY_MS = 8000;

describe('retry state survives an app restart mid-backoff', () => {
  let broker: TestBroker;
  let exchange: string;
  let queue: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    exchange = broker.name('events');
    queue = broker.name('restart');
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker.deleteByPrefix();
    await broker.close();
  });

  function startApp(): ChildApp {
    return ChildApp.start(FIXTURE, {
      env: {
        FIXTURE_QUEUE: queue,
        FIXTURE_EXCHANGE: exchange,
        // A classic queue, whose unacknowledged count rabbitmqctl reports at once.
        FIXTURE_QUEUE_TYPE: 'classic',
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.fixture`,
        FIXTURE_INITIAL_DELAY_MS: String(INITIAL_DELAY_MS),
        FIXTURE_RANDOM: String(RANDOM),
      },
    });
  }

  /** How many messages wait in the retry delay levels (the app declares only those its delays need). */
  async function waitingInDelayLevels(): Promise<number> {
    let total = 0;
    for (const level of delayLevelNames(exchange)) {
      total += await broker.queueDepth(level).catch(() => 0);
    }
    return total;
  }

  it('keeps a waiting retry through a SIGKILL, then delivers it as attempt 2 to the next process, after its delay', async () => {
    const first = startApp();
    await first.waitForLine(/^fixture ready$/);
    await broker.publishRaw({ exchange, routingKey: 'fixture.job' }, JSON.stringify({ id: 'fail-first-1' }), {
      messageId: 'restart-1',
      type: 'fixture.job',
      contentType: 'application/json',
      persistent: true,
      headers: { [HEADERS.idempotencyKey]: 'fixture:fail-first-1' },
    });
    const scheduled = await first.waitForLine(/attempt 2 in \d+ ms/);
    const scheduledAt = Date.now();
    // The retry is confirmed before the original is acknowledged; a kill before the ack reaches the broker
    // would (rightly) deliver the original again too, so the kill waits for the ack.
    await waitFor('the original to be acknowledged', async () => {
      const counts = await queueCounts(queue);
      return counts.ready === 0 && counts.unacked === 0;
    });
    await first.stop('SIGKILL');

    expect(Number(/attempt 2 in (\d+) ms/.exec(scheduled)?.[1])).toBe(RETRY_DELAY_MS);
    expect(first.lines.filter((line) => line.startsWith('handling fail-first-1'))).toEqual([
      'handling fail-first-1 attempt=1 redelivered=false',
    ]);
    expect(await broker.queueDepth(queue)).toBe(0);
    expect(await broker.queueDepth(`${queue}.dlq`)).toBe(0);
    expect(await waitingInDelayLevels()).toBe(1);

    const second = startApp();
    await second.waitForLine(/^handled fail-first-1 attempt=2$/, 25_000);
    const handledAfter = Date.now() - scheduledAt;

    expect(handledAfter).toBeGreaterThanOrEqual(RETRY_DELAY_MS - 100);
    expect(second.lines.filter((line) => line.startsWith('handling fail-first-1'))).toEqual([
      'handling fail-first-1 attempt=2 redelivered=false',
    ]);
    expect(await waitingInDelayLevels()).toBe(0);
    expect(await broker.queueDepth(`${queue}.dlq`)).toBe(0);
    await second.stop('SIGTERM');
  });
});
