import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, type MessageContext, MessageType } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'receipt.requested', idempotencyKey: (m: ReceiptRequested) => `receipt:${m.id}` })
class ReceiptRequested {
  @IsString() id!: string;
}

const QUEUE = uniqueQueue('scrub');
const MAX_ATTEMPTS = 3;
const SECRET = 's3cret-Xq7';

/**
 * What Node's fetch and a broker client throw when they are given URLs with credentials in them: the message
 * quotes each URL whole.
 */
const LEAKY_MESSAGE =
  `Request cannot be constructed from a URL that includes credentials: https://user:${SECRET}@receipts.example.com/path; ` +
  `fallback amqp://guest:${SECRET}@rabbit.internal:5672/vhost?password=${SECRET} also failed`;

@Injectable()
class ReceiptHandler {
  readonly attempts: number[] = [];

  @Consume({ queue: QUEUE, retry: { maxAttempts: MAX_ATTEMPTS, initialDelayMs: 50, maxDelayMs: 100 } })
  async onRequested(_event: ReceiptRequested, ctx: MessageContext): Promise<void> {
    this.attempts.push(ctx.attempt);
    throw new TypeError(LEAKY_MESSAGE);
  }
}

describe('credentials in an error text never reach the logs or the dead letter', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: ReceiptHandler;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { providers: [ReceiptHandler] });
    handler = app.get(ReceiptHandler);
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it(`retries ${MAX_ATTEMPTS} times and dead-letters a message whose handler throws URLs with passwords, keeping only their hosts`, async () => {
    await app.publisher.publish(Object.assign(new ReceiptRequested(), { id: 'r-1' }));

    const [deadLetter] = await broker.waitForMessages(`${QUEUE}.dlq`, 1, 20_000);
    await waitFor('the failure to be logged', () => app.logger.find('warn', /dead-lettering/).length > 0);

    expect(handler.attempts).toEqual([1, 2, 3]);
    const headers = deadLetter.properties.headers ?? {};
    expect(headers[DEAD_LETTER_HEADERS.reason]).toBe('attempts-exhausted');
    expect(headers[DEAD_LETTER_HEADERS.errorMessage]).toBe(
      'Request cannot be constructed from a URL that includes credentials: https://***@receipts.example.com/path; ' +
        'fallback amqp://***@rabbit.internal:5672/vhost?password=*** also failed',
    );
    expect(String(headers[DEAD_LETTER_HEADERS.errorStack])).toMatch(
      /^TypeError: Request cannot be constructed .*https:\/\/\*\*\*@receipts\.example\.com\/path/,
    );
    expect(JSON.stringify(headers)).not.toContain(SECRET);
    expect(JSON.stringify(headers)).not.toContain('user:');

    // Every retry and the dead-lettering were logged, each with the error's text, none with a password.
    const failures = app.logger.lines.filter((line) => line.message.includes('receipts.example.com'));
    expect(failures.length).toBeGreaterThanOrEqual(MAX_ATTEMPTS);
    expect(failures.every((line) => line.message.includes('https://***@receipts.example.com'))).toBe(true);
    expect(app.logger.dump()).not.toContain(SECRET);
  });
});
