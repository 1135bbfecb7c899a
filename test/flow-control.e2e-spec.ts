import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, MessageType } from 'nestjs-reliable-messaging';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'flow.report-requested', idempotencyKey: (m: ReportRequested) => m.id })
class ReportRequested {
  @IsString() id!: string;
}

@MessageType({ type: 'flow.price-checked', idempotencyKey: (m: PriceChecked) => m.id })
class PriceChecked {
  @IsString() id!: string;
}

@MessageType({ type: 'flow.receipt-requested', idempotencyKey: (m: ReceiptRequested) => m.id })
class ReceiptRequested {
  @IsString() id!: string;
}

@Injectable()
class Handlers {
  slowStarted = 0;
  readonly fastDone = new Map<string, number>();
  readonly receiptStarts: number[] = [];
  /** Ends every slow handler; until then the slow consumer's slots stay taken. */
  releaseSlow!: () => void;
  private readonly slowReleased = new Promise<void>((resolve) => (this.releaseSlow = resolve));

  @Consume({ queue: uniqueQueue('flow-slow'), concurrency: 2 })
  async onReport(_event: ReportRequested): Promise<void> {
    this.slowStarted++;
    await this.slowReleased;
  }

  @Consume({ queue: uniqueQueue('flow-fast'), concurrency: 10 })
  async onPrice(event: PriceChecked): Promise<void> {
    this.fastDone.set(event.id, performance.now());
  }

  @Consume({
    queue: uniqueQueue('flow-limited'),
    concurrency: 10,
    prefetch: 10,
    rateLimit: { limit: 5, periodMs: 500 },
  })
  async onReceipt(_event: ReceiptRequested): Promise<void> {
    this.receiptStarts.push(performance.now());
  }
}

/** Consumers isolated from each other, and a rate-limited consumer, on the real broker. */
describe('flow control', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handlers: Handlers;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { providers: [Handlers] });
    handlers = app.get(Handlers);
  });

  afterAll(async () => {
    handlers?.releaseSlow();
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  /** Publishes 100 fast messages and waits until all were handled. */
  async function fastRound(prefix: string): Promise<void> {
    for (let i = 0; i < 100; i++)
      await app.publisher.publishNow(Object.assign(new PriceChecked(), { id: `${prefix}-${i}` }));
    await waitFor(
      `100 ${prefix} prices`,
      () => [...handlers.fastDone.keys()].filter((id) => id.startsWith(prefix)).length === 100,
    );
  }

  it('keeps a fast consumer going while a slow one is saturated with a backlog (own channel and prefetch)', async () => {
    await fastRound('baseline');
    for (let i = 0; i < 20; i++)
      await app.publisher.publishNow(Object.assign(new ReportRequested(), { id: `report-${i}` }));
    await waitFor('both slow slots busy', () => handlers.slowStarted === 2);

    // The slow handlers hold their slots until the end: a consumer sharing their channel or prefetch would
    // never get its messages, so all 100 arriving is the proof, whatever the machine's speed.
    await fastRound('loaded');

    expect(handlers.slowStarted).toBe(2);
    handlers.releaseSlow();
  });

  it('starts at most `limit` handlers per period on a rate-limited consumer, and handles every message', async () => {
    for (let i = 0; i < 15; i++)
      await app.publisher.publishNow(Object.assign(new ReceiptRequested(), { id: `receipt-${i}` }));
    await waitFor('15 receipts', () => handlers.receiptStarts.length === 15, { timeoutMs: 5_000 });

    // The gate releases the sixth start a full period after the first; the handler records its start a little
    // later, after decoding, by a delay that varies per message on a loaded machine. A fifth of a period allows
    // for that and still fails a limiter that lets a sixth start into any window (those starts come together).
    const starts = handlers.receiptStarts;
    for (let i = 5; i < starts.length; i++) expect(starts[i] - starts[i - 5]).toBeGreaterThanOrEqual(400);
    expect(starts[14] - starts[0]).toBeGreaterThanOrEqual(2 * 400);
  });
});
