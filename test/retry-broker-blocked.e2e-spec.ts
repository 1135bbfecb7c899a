import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, HEADERS, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { clearMemoryAlarm, withMemoryAlarm } from './support/broker-alarm';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const run = promisify(execFile);

@MessageType({ type: 'stock.reserved', idempotencyKey: (m: StockReserved) => `reserved:${m.sku}` })
class StockReserved {
  @IsString() sku!: string;
}

const QUEUE = uniqueQueue('stock');
/** How long the alarm stays on once the retry's publish is blocked: several confirm timeouts. */
const ALARM_MS = 4_000;

/** Fails its first attempt when the spec says so, while the broker refuses every publish. */
@Injectable()
class StockHandler {
  readonly runs: Array<{ attempt: number; redelivered: boolean; redeliveries: unknown }> = [];
  fail!: () => void;
  private readonly failing = new Promise<void>((resolve) => (this.fail = resolve));

  @Consume({
    queue: QUEUE,
    queueType: 'classic',
    dedup: false,
    retry: { initialDelayMs: 100, maxDelayMs: 100 },
  })
  async onReserved(_event: StockReserved, ctx: MessageContext): Promise<void> {
    this.runs.push({
      attempt: ctx.attempt,
      redelivered: ctx.redelivered,
      redeliveries: ctx.envelope.headers[HEADERS.redeliveries],
    });
    if (ctx.attempt === 1) {
      await this.failing;
      throw new Error('the warehouse API timed out');
    }
  }
}

/** Whether the broker has blocked one of the app's connections (it tried to publish during the alarm). */
async function blockedConnection(namePrefix: string): Promise<boolean> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_connections', 'client_properties', 'state']);
  return stdout
    .split('\n')
    .some((line) => line.includes(`{"connection_name","${namePrefix}`) && /\tblocked$/.test(line));
}

describe('a retry the broker will not take yet: the delivery is held, not requeued', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [StockHandler],
      options: { publishConfirmTimeoutMs: 1_000 },
    });
  });

  afterAll(async () => {
    await clearMemoryAlarm();
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('publishes the retry once the memory alarm ends, and the message arrives as attempt 2, not redelivered', async () => {
    const handler = app.get(StockHandler);
    await app.publisher.publishNow(Object.assign(new StockReserved(), { sku: 'sku-1' }));
    await waitFor('the first attempt to start', () => handler.runs.length === 1);

    await withMemoryAlarm(async () => {
      handler.fail();
      await waitFor('the retry to be blocked by the broker', () => blockedConnection(app.connectionName));
      // The outage itself: it lasts several confirm timeouts, each of which used to send the delivery back.
      await new Promise((resolve) => setTimeout(resolve, ALARM_MS));
    });

    await waitFor('the second attempt', () => handler.runs.length === 2, { timeoutMs: 20_000 });
    await waitFor('the queue to be empty', async () => {
      const counts = await queueCounts(QUEUE);
      return counts.ready + counts.unacked === 0;
    });
    expect(handler.runs).toEqual([
      { attempt: 1, redelivered: false, redeliveries: undefined },
      { attempt: 2, redelivered: false, redeliveries: undefined },
    ]);
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(0);
  });
});
