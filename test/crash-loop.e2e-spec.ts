import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HEADERS } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { ChildApp } from './support/child-app';
import { TestBroker } from './support/test-broker';

/** The compiled fixture; `RM_TEST_DIST` points at another build output than `dist` (a private build). */
const FIXTURE = `${process.env.RM_TEST_DIST ?? 'dist'}/test/fixtures/retry-app.js`;
const MAX_REDELIVERIES = 1;

describe('a handler that kills the process is dead-lettered after the redelivery bound, never looping', () => {
  let broker: TestBroker;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });

  afterAll(async () => {
    await ChildApp.killAll();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it.each(['quorum', 'classic'] as const)('on a %s queue', async (queueType) => {
    const exchange = broker.name(`${queueType}-events`);
    const queue = broker.name(`${queueType}-crash`);
    const start = () =>
      ChildApp.start(FIXTURE, {
        env: {
          FIXTURE_QUEUE: queue,
          FIXTURE_QUEUE_TYPE: queueType,
          FIXTURE_EXCHANGE: exchange,
          FIXTURE_CONNECTION_NAME: `${broker.prefix}.fixture`,
          FIXTURE_MAX_REDELIVERIES: String(MAX_REDELIVERIES),
        },
      });
    const publish = (id: string) =>
      broker.publishRaw({ exchange, routingKey: 'fixture.job' }, JSON.stringify({ id }), {
        messageId: `${queueType}-${id}`,
        type: 'fixture.job',
        contentType: 'application/json',
        persistent: true,
        headers: { [HEADERS.idempotencyKey]: `fixture:${id}` },
      });

    const crashes: ChildApp[] = [];
    let survivor: ChildApp | undefined;
    // The first delivery and each counted redelivery kill a process; the delivery past the bound is dead-lettered.
    for (let run = 0; run <= MAX_REDELIVERIES + 1 && !survivor; run++) {
      const app = start();
      await app.waitForLine(/^fixture ready$/);
      if (run === 0) await publish('crash-1');
      await Promise.race([
        app.waitForExit(15_000).catch(() => undefined),
        app.waitForLine(/dead-lettering \(redelivery-limit\)/, 15_000).catch(() => undefined),
      ]);
      if (app.hasExited) crashes.push(app);
      else survivor = app;
    }

    expect(crashes).toHaveLength(MAX_REDELIVERIES + 1);
    for (const crashed of crashes) expect(await crashed.waitForExit()).toEqual({ code: 1, signal: null });
    const handlings = crashes.flatMap((app) =>
      app.lines.filter((line) => line.startsWith('handling crash-1')),
    );
    expect(handlings).toEqual([
      'handling crash-1 attempt=1 redelivered=false',
      'handling crash-1 attempt=1 redelivered=false',
    ]);
    expect(survivor?.lines.some((line) => line.startsWith('handling crash-1'))).toBe(false);

    const [deadLetter] = await broker.waitForMessages(`${queue}.dlq`, 1, 5_000);
    expect(deadLetter.properties.messageId).toBe(`${queueType}-crash-1`);
    expect(deadLetter.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'redelivery-limit',
      [DEAD_LETTER_HEADERS.errorClass]: 'RedeliveryLimitError',
      [DEAD_LETTER_HEADERS.queue]: queue,
      [DEAD_LETTER_HEADERS.exchange]: exchange,
      [DEAD_LETTER_HEADERS.routingKey]: 'fixture.job',
      [HEADERS.redeliveries]: MAX_REDELIVERIES,
    });

    // The consumer goes on with the next message.
    await publish('ok-1');
    await survivor?.waitForLine(/^handled ok-1 attempt=1$/);
    expect(await broker.queueDepth(queue)).toBe(0);
    await survivor?.stop('SIGTERM');
  });
});
