import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, type MessageContext, MessageType } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'stock.reserved', idempotencyKey: (m: StockReserved) => `stock:${m.id}` })
class StockReserved {
  @IsString() id!: string;
}

const QUEUE = uniqueQueue('exhausted');
const MAX_ATTEMPTS = 4;
const HEALTHY = 1000;

/** A promise with its resolve function, to hold handlers until everything is published. */
class Gate {
  open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
}

@Injectable()
class StockHandler {
  readonly handled: Array<{ id: string; attempt: number }> = [];
  gate = new Gate();

  @Consume({ queue: QUEUE, retry: { maxAttempts: MAX_ATTEMPTS, initialDelayMs: 300 } })
  async onReserved(event: StockReserved, ctx: MessageContext): Promise<void> {
    await this.gate.opened;
    this.handled.push({ id: event.id, attempt: ctx.attempt });
    if (event.id.startsWith('poison')) throw new Error('the warehouse rejects this reservation');
  }
}

function reserved(id: string): StockReserved {
  return Object.assign(new StockReserved(), { id });
}

describe('a poison message exhausts its attempts without holding back the healthy messages behind it', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: StockHandler;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { providers: [StockHandler] });
    handler = app.get(StockHandler);
  });

  afterAll(async () => {
    handler?.gate.open();
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  async function publishAll(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 100) {
      await Promise.all(ids.slice(i, i + 100).map((id) => app.publisher.publish(reserved(id))));
    }
  }

  it(`dead-letters the poison after exactly ${MAX_ATTEMPTS} attempts; all ${HEALTHY} healthy messages are handled before its first retry`, async () => {
    const healthy = Array.from({ length: HEALTHY }, (_, i) => `ok-${i}`);
    await publishAll(['poison-1', ...healthy]);
    handler.gate.open();

    const [deadLetter] = await broker.waitForMessages(`${QUEUE}.dlq`, 1, 20_000);
    await waitFor(
      'every healthy message',
      () => handler.handled.filter((h) => h.id.startsWith('ok-')).length >= HEALTHY,
    );

    const poison = handler.handled.filter((h) => h.id === 'poison-1');
    expect(poison.map((h) => h.attempt)).toEqual([1, 2, 3, 4]);
    const healthyHandled = handler.handled.filter((h) => h.id.startsWith('ok-'));
    expect(new Set(healthyHandled.map((h) => h.id)).size).toBe(HEALTHY);
    expect(healthyHandled.every((h) => h.attempt === 1)).toBe(true);
    // The retry waited outside the queue and came back at its tail: nothing queued behind it waited for it.
    const secondAttempt = handler.handled.findIndex((h) => h.id === 'poison-1' && h.attempt === 2);
    const lastHealthy = handler.handled.findLastIndex((h) => h.id.startsWith('ok-'));
    expect(lastHealthy).toBeLessThan(secondAttempt);

    expect(deadLetter.properties.messageId).toEqual(expect.any(String));
    expect(deadLetter.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: MAX_ATTEMPTS,
      [DEAD_LETTER_HEADERS.errorMessage]: 'the warehouse rejects this reservation',
    });
    expect(JSON.parse(deadLetter.content.toString())).toEqual({ id: 'poison-1' });
    await waitFor('the queue to be empty', async () => (await broker.queueDepth(QUEUE)) === 0);
    expect(await broker.queueDepth(`${QUEUE}.dlq`)).toBe(0);
  });
});
