import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import {
  ConfigurationError,
  Consume,
  HEADERS,
  MessageType,
  NonRetryableError,
  RemoteHandlerError,
  RequestInterruptedError,
  RequestTimeoutError,
  UnroutableMessageError,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import { closeConnectionsNamed, MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** A request without an idempotency key of its own: each request uses its message id. */
@MessageType({ type: 'price.quote' })
class QuotePrice {
  @IsString() sku!: string;
  @IsInt() quantity!: number;
}

interface Quote {
  sku: string;
  totalCents: number;
  attempt: number;
}

const QUOTE_QUEUE = uniqueQueue('price-quote');
/** How much later than its timeout a RequestTimeoutError may come on a busy machine. */
const TIMEOUT_MARGIN_MS = 1500;

@Injectable()
class Pricing {
  /** Every message handled, with whether it asked for a reply. */
  readonly handled: Array<{ sku: string; attempt: number; replyTo?: string }> = [];
  /** Set while a `hang` request is being handled; calling it lets the handler return. */
  release?: () => void;

  @Consume({ queue: QUOTE_QUEUE, reply: true, retry: { initialDelayMs: 100, maxDelayMs: 200 } })
  async quote(request: QuotePrice, ctx: MessageContext): Promise<Quote> {
    this.handled.push({
      sku: request.sku,
      attempt: ctx.attempt,
      replyTo: ctx.raw.properties.replyTo as string | undefined,
    });
    if (request.sku === 'unknown') throw new NonRetryableError(`no price for sku ${request.sku}`);
    if (request.sku === 'flaky' && ctx.attempt === 1) throw new Error('the price service hiccupped');
    if (request.sku === 'hang') await new Promise<void>((resolve) => (this.release = resolve));
    return { sku: request.sku, totalCents: request.quantity * 250, attempt: ctx.attempt };
  }
}

function quote(sku: string, quantity = 3): QuotePrice {
  return Object.assign(new QuotePrice(), { sku, quantity });
}

/** How long `work` took to settle, and its error (undefined when it resolved). */
async function timed(work: Promise<unknown>): Promise<{ elapsedMs: number; error: unknown }> {
  const started = performance.now();
  try {
    await work;
    return { elapsedMs: performance.now() - started, error: undefined };
  } catch (error) {
    return { elapsedMs: performance.now() - started, error };
  }
}

describe('request-reply over direct reply-to', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let pricing: Pricing;
  /** Bound to `price.audit` on the app's exchange, with no consumer: requests to it are never answered. */
  let unattended: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { providers: [Pricing] });
    pricing = app.get(Pricing);
    unattended = broker.name('unattended');
    const channel = await broker.openChannel();
    await channel.assertQueue(unattended, { durable: false });
    await channel.bindQueue(unattended, broker.name('events'), 'price.audit');
  });

  afterAll(async () => {
    pricing?.release?.();
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it("answers a request with the handler's return value", async () => {
    await expect(app.publisher.request<Quote>(quote('sku-1'), { timeoutMs: 10_000 })).resolves.toEqual({
      sku: 'sku-1',
      totalCents: 750,
      attempt: 1,
    });
    expect(pricing.handled.find((h) => h.sku === 'sku-1')?.replyTo).toMatch(/^amq\.rabbitmq\.reply-to\./);
  });

  it('answers concurrent requests each with its own reply', async () => {
    const skus = Array.from({ length: 20 }, (_, i) => `many-${i}`);
    const replies = await Promise.all(
      skus.map((sku, i) => app.publisher.request<Quote>(quote(sku, i + 1), { timeoutMs: 10_000 })),
    );
    expect(replies.map((r) => [r.sku, r.totalCents])).toEqual(skus.map((sku, i) => [sku, (i + 1) * 250]));
  });

  it('fails a request nobody answers with RequestTimeoutError after its timeout, and the request expires', async () => {
    const timeoutMs = 500;
    const { elapsedMs, error } = await timed(
      app.publisher.request({ type: 'price.audit', payload: { sku: 'x' } }, { timeoutMs }),
    );

    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect((error as Error).message).toMatch(
      /^no reply to request 'price\.audit' \(message [\w-]+, sent to exchange '.+\.events' with routing key 'price\.audit'\) within 500 ms/,
    );
    expect(elapsedMs).toBeGreaterThanOrEqual(timeoutMs - 5);
    expect(elapsedMs).toBeLessThan(timeoutMs + TIMEOUT_MARGIN_MS);
    await waitFor('the unanswered request to expire from its queue', async () => {
      return (await broker.queueDepth(unattended)) === 0;
    });
  });

  it('answers a non-retryable failure with RemoteHandlerError at once, and dead-letters the request', async () => {
    const { elapsedMs, error } = await timed(app.publisher.request(quote('unknown'), { timeoutMs: 20_000 }));

    expect(error).toBeInstanceOf(RemoteHandlerError);
    expect(error).toMatchObject({
      remoteName: 'NonRetryableError',
      remoteMessage: 'no price for sku unknown',
      message: "the responder to request 'price.quote' failed: NonRetryableError: no price for sku unknown",
    });
    expect((error as Error).message).not.toMatch(/\n\s+at /);
    expect(elapsedMs).toBeLessThan(5_000);
    const [deadLetter] = await broker.waitForMessages(`${QUOTE_QUEUE}.dlq`, 1);
    expect(JSON.parse(deadLetter.content.toString())).toEqual({ sku: 'unknown', quantity: 3 });
    // The dead letter keeps no expiration: it must outlive its caller's timeout.
    expect(deadLetter.properties.expiration).toBeUndefined();
  });

  it('retries a retryable failure, and the retry answers', async () => {
    await expect(app.publisher.request<Quote>(quote('flaky'), { timeoutMs: 15_000 })).resolves.toEqual({
      sku: 'flaky',
      totalCents: 750,
      attempt: 2,
    });
  });

  it('fails a request no queue is bound for with UnroutableMessageError at once', async () => {
    const { elapsedMs, error } = await timed(
      app.publisher.request({ type: 'price.nobody', payload: {} }, { timeoutMs: 20_000 }),
    );

    expect(error).toBeInstanceOf(UnroutableMessageError);
    expect(elapsedMs).toBeLessThan(5_000);
  });

  it('handles a message without replyTo on a reply consumer, and answers nothing', async () => {
    await broker.publishRaw(
      { exchange: broker.name('events'), routingKey: 'price.quote' },
      JSON.stringify({ sku: 'no-reply-to', quantity: 1 }),
      {
        messageId: 'no-reply-to-1',
        type: 'price.quote',
        contentType: 'application/json',
        headers: { [HEADERS.idempotencyKey]: 'no-reply-to-1', [HEADERS.schemaVersion]: '1.0' },
      },
    );

    await waitFor('the message without replyTo to be handled', () =>
      pricing.handled.some((h) => h.sku === 'no-reply-to'),
    );
    expect(pricing.handled.find((h) => h.sku === 'no-reply-to')?.replyTo).toBeUndefined();
    await waitFor('it to be acknowledged', async () => (await broker.queueDepth(QUOTE_QUEUE)) === 0);
    expect(app.logger.find('warn', /no-reply-to|reply/)).toEqual([]);
  });

  it('refuses a request without a timeout with a ConfigurationError that says what to pass', async () => {
    await expect(app.publisher.request(quote('sku-2'), {} as never)).rejects.toThrow(
      new ConfigurationError(
        "request() of 'QuotePrice' needs a timeout: pass { timeoutMs } as a positive number of milliseconds up to 86400000, e.g. request(message, { timeoutMs: 5000 }); got none",
      ),
    );
    await expect(app.publisher.request(quote('sku-2'), { timeoutMs: Number.NaN })).rejects.toThrow(
      ConfigurationError,
    );
  });

  it('fails a request in flight with RequestInterruptedError when the publisher connection drops, then serves the next', async () => {
    const inFlight = timed(app.publisher.request(quote('hang'), { timeoutMs: 30_000 }));
    await waitFor('the hanging request to reach its handler', () => pricing.release !== undefined);

    await expect(closeConnectionsNamed(`${app.connectionName}:publish`)).resolves.toBe(1);
    const { elapsedMs, error } = await inFlight;

    expect(error).toBeInstanceOf(RequestInterruptedError);
    expect((error as Error).message).toMatch(/^request 'price\.quote' \(message [\w-]+\) was interrupted/);
    expect(elapsedMs).toBeLessThan(10_000);
    pricing.release?.();
    await waitFor(
      'a request to be answered again once the publisher connection is back',
      async () => {
        const reply = await app.publisher.request<Quote>(quote('after-drop'), { timeoutMs: 2_000 });
        return reply.sku === 'after-drop';
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
  });
});
