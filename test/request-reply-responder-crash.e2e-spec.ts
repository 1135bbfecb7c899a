import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RequestTimeoutError } from 'nestjs-reliable-messaging';
import { ChildApp } from './support/child-app';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/responder-app.js`;
const TIMEOUT_MS = 4_000;
/** How much later than its timeout the RequestTimeoutError may come on a busy machine. */
const MARGIN_MS = 1_500;

describe('a responder killed mid-request', () => {
  let broker: TestBroker;
  let caller: MessagingTestApp;
  let responder: ChildApp;
  const queue = uniqueQueue('responder-crash');

  beforeAll(async () => {
    broker = await TestBroker.connect();
    broker.track(queue, `${queue}.dlq`);
    responder = ChildApp.start(FIXTURE, {
      env: {
        FIXTURE_QUEUE: queue,
        FIXTURE_EXCHANGE: broker.name('events'),
        FIXTURE_CONNECTION_NAME: `${broker.prefix}.responder`,
      },
    });
    await responder.waitForLine(/^responder ready$/);
    // The caller has no consumers: a process of its own, on the responder's exchange.
    caller = await MessagingTestApp.start(broker);
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await caller?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('answers while it runs', async () => {
    await expect(
      caller.publisher.request({ type: 'price.quote', payload: { sku: 'ok-1' } }, { timeoutMs: TIMEOUT_MS }),
    ).resolves.toEqual({
      sku: 'ok-1',
    });
  });

  it('gives the caller RequestTimeoutError within its timeout when SIGKILLed while its handler runs', async () => {
    const started = performance.now();
    const reply = caller.publisher.request(
      { type: 'price.quote', payload: { sku: 'stall-1' } },
      { timeoutMs: TIMEOUT_MS },
    );
    const settled = reply.then(
      () => ({ error: undefined as unknown, elapsedMs: performance.now() - started }),
      (error: unknown) => ({ error, elapsedMs: performance.now() - started }),
    );
    await responder.waitForLine(/^handling stall-1 /);

    await expect(responder.stop('SIGKILL')).resolves.toEqual({ code: null, signal: 'SIGKILL' });
    const { error, elapsedMs } = await settled;

    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error).toMatchObject({ messageType: 'price.quote', timeoutMs: TIMEOUT_MS });
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
  });

  it('lets the request it held expire from the queue into the dead-letter queue, as expired', async () => {
    const [expired] = await broker.waitForMessages(`${queue}.dlq`, 1);

    expect(JSON.parse(expired.content.toString())).toEqual({ sku: 'stall-1' });
    const deaths = expired.properties.headers?.['x-death'] as Array<{ reason: string }> | undefined;
    expect(deaths?.[0]?.reason).toBe('expired');
  });
});
