import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import {
  Consume,
  HEADERS,
  type MessageContext,
  MessagePublisher,
  MessageType,
  NonRetryableError,
} from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, queueCounts, uniqueQueue, type QueueCounts } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

@MessageType({
  type: 'order.placed',
  version: '1.2',
  idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}`,
})
class OrderPlaced {
  @IsString() orderId!: string;
  @IsInt() totalCents!: number;
}

@MessageType({ type: 'payment.requested', idempotencyKey: (m: PaymentRequested) => `payment:${m.orderId}` })
class PaymentRequested {
  @IsString() orderId!: string;
}

function orderPlaced(orderId: string, totalCents = 1250): OrderPlaced {
  return Object.assign(new OrderPlaced(), { orderId, totalCents });
}

/** A promise with its resolve function, to hold handlers until a test lets them finish. */
class Gate {
  open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
}

/** The deliveries a handler received for orders whose id starts with `prefix` (one test's own messages). */
function handled(handler: OrderHandler, prefix: string): OrderHandler['received'] {
  return handler.received.filter(({ event }) => event.orderId.startsWith(prefix));
}

const ORDERS = uniqueQueue('orders');
const PAYMENTS = uniqueQueue('payments');

/** Handles `order.placed`: records each delivery, may be held by a gate, and publishes a follow-up. */
@Injectable()
class OrderHandler {
  readonly received: Array<{ event: OrderPlaced; ctx: MessageContext }> = [];
  gate?: Gate;
  running = 0;
  maxRunning = 0;
  failWith?: (event: OrderPlaced, ctx: MessageContext) => Error | undefined;

  constructor(private readonly publisher: MessagePublisher) {}

  // NOTE: a classic queue, because rabbitmqctl reports a quorum queue's unacknowledged count up to 5 s late;
  // a classic queue's counts are exact, and acknowledgement does not depend on the queue type.
  @Consume({ queue: ORDERS, concurrency: 3, queueType: 'classic' })
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<void> {
    this.received.push({ event, ctx });
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      await this.gate?.opened;
      const failure = this.failWith?.(event, ctx);
      if (failure) throw failure;
      if (event.orderId.startsWith('chain-')) {
        await this.publisher.publish(Object.assign(new PaymentRequested(), { orderId: event.orderId }));
      }
    } finally {
      this.running--;
    }
  }
}

/** Handles `payment.requested` on its own queue and channel. */
@Injectable()
class PaymentHandler {
  readonly received: Array<{ event: PaymentRequested; ctx: MessageContext }> = [];

  @Consume({ queue: PAYMENTS })
  async onPaymentRequested(event: PaymentRequested, ctx: MessageContext): Promise<void> {
    this.received.push({ event, ctx });
  }
}

describe('publish and consume against the real broker', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let orders: OrderHandler;
  let payments: PaymentHandler;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { providers: [OrderHandler, PaymentHandler] });
    orders = app.get(OrderHandler);
    payments = app.get(PaymentHandler);
  });

  afterEach(async () => {
    orders.gate?.open();
    orders.gate = undefined;
    await waitFor("the last test's messages to be handled", async () => {
      const { messageCount } = await (await broker.openChannel()).checkQueue(ORDERS);
      return messageCount === 0 && orders.running === 0;
    });
    orders.failWith = undefined;
    orders.received.length = 0;
    orders.maxRunning = 0;
    payments.received.length = 0;
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('delivers a published message with the full envelope and acknowledges it once the handler resolves', async () => {
    const occurredAt = new Date('2026-01-02T03:04:05.678Z');
    const receipt = await app.publisher.publish(orderPlaced('o-1'), { occurredAt });

    await waitFor('the order to be handled', () => orders.received.length === 1);
    const { event, ctx } = orders.received[0];
    expect(event).toBeInstanceOf(OrderPlaced);
    expect(event).toEqual(orderPlaced('o-1'));
    expect(receipt.messageId).toMatch(UUID_V7);
    expect(ctx.envelope).toMatchObject({
      messageId: receipt.messageId,
      idempotencyKey: 'order-placed:o-1',
      type: 'order.placed',
      schemaVersion: '1.2',
      occurredAt,
      correlationId: receipt.messageId,
      causationId: undefined,
    });
    expect(ctx.attempt).toBe(1);
    expect(ctx.redelivered).toBe(false);
    expect(ctx.queue).toBe(ORDERS);
    expect(ctx.consumer).toBe('OrderHandler.onOrderPlaced');
    expect(ctx.raw.properties).toMatchObject({
      messageId: receipt.messageId,
      type: 'order.placed',
      contentType: 'application/json',
      deliveryMode: 2,
      appId: app.connectionName,
    });
    // The first message of a flow is its own correlation id, which the reader supplies: not written twice.
    expect(ctx.raw.properties.correlationId).toBeUndefined();
    expect(ctx.raw.properties.contentEncoding).toBeUndefined();
    expect(ctx.raw.properties.headers).toMatchObject({
      [HEADERS.idempotencyKey]: 'order-placed:o-1',
      [HEADERS.schemaVersion]: '1.2',
      [HEADERS.occurredAt]: '2026-01-02T03:04:05.678Z',
    });
    await waitFor('the queue to be empty and nothing unacknowledged', async () => {
      const counts = await queueCounts(ORDERS);
      return counts.ready === 0 && counts.unacked === 0;
    });
  });

  it('gives a message published inside a handler the handled message as its cause and shares its correlation id', async () => {
    const receipt = await app.publisher.publish(orderPlaced('chain-1'), { correlationId: 'checkout-77' });

    await waitFor('the follow-up payment to be handled', () => payments.received.length === 1);
    const { event, ctx } = payments.received[0];
    expect(event.orderId).toBe('chain-1');
    expect(ctx.envelope.causationId).toBe(receipt.messageId);
    expect(ctx.envelope.correlationId).toBe('checkout-77');
    expect(ctx.envelope.messageId).not.toBe(receipt.messageId);
    expect(ctx.envelope.idempotencyKey).toBe('payment:chain-1');
    expect(ctx.envelope.schemaVersion).toBe('1.0');
  });

  it('keeps a message unacknowledged while its handler runs and acknowledges it only after the promise resolves', async () => {
    orders.gate = new Gate();
    await app.publisher.publish(orderPlaced('slow-1'));
    await waitFor('the handler to start', () => orders.running === 1);

    expect(await queueCounts(ORDERS)).toMatchObject({ ready: 0, unacked: 1 });

    orders.gate.open();
    await waitFor('the acknowledgement', async () => (await queueCounts(ORDERS)).unacked === 0);
    expect(await queueCounts(ORDERS)).toMatchObject({ ready: 0, unacked: 0 });
  });

  it.each([
    ['throws an Error', () => new Error('database unavailable')],
    ['rejects with a TypeError', () => new TypeError('cannot read properties of undefined')],
  ])('never acknowledges as done a message whose handler %s: it is not lost', async (_how, failure) => {
    orders.failWith = (_event, ctx) => (ctx.attempt === 1 ? failure() : undefined);
    const receipt = await app.publisher.publish(orderPlaced(`fails-${_how.length}`));

    // The failure handler decides between another attempt and the dead-letter queue; either way the message
    // must come back, never be acknowledged and dropped.
    const deadLetters: Array<{ headers: Record<string, unknown> }> = [];
    await waitFor('the message to be redelivered or dead-lettered', async () => {
      for (const message of await broker.getAll(`${ORDERS}.dlq`)) {
        deadLetters.push({ headers: message.properties.headers ?? {} });
      }
      return deadLetters.length > 0 || orders.received.some(({ ctx }) => ctx.attempt > 1);
    });
    if (deadLetters.length > 0) {
      expect(deadLetters).toHaveLength(1);
      expect(deadLetters[0].headers).toMatchObject({
        [DEAD_LETTER_HEADERS.reason]: expect.stringMatching(/^(handler-failed|attempts-exhausted)$/),
        [DEAD_LETTER_HEADERS.errorMessage]: failure().message,
        [DEAD_LETTER_HEADERS.errorClass]: failure().name,
        [DEAD_LETTER_HEADERS.queue]: ORDERS,
        [DEAD_LETTER_HEADERS.handler]: 'OrderHandler.onOrderPlaced',
      });
    } else {
      expect(orders.received.map(({ ctx }) => ctx.envelope.messageId)).toEqual([
        receipt.messageId,
        receipt.messageId,
      ]);
    }
  });

  it('bounds what is in flight by the prefetch: the rest waits in the queue', async () => {
    orders.gate = new Gate();
    for (let n = 0; n < 10; n++) await app.publisher.publish(orderPlaced(`bounded-${n}`));

    await waitFor('three handlers to run', () => orders.running === 3);
    // The broker's own count is the barrier: while it holds seven ready and three unacknowledged, it has sent no
    // fourth delivery, and with every handler held none can be acknowledged to make room for one.
    let counts: QueueCounts | undefined;
    await waitFor(
      () => `the broker to count 7 ready and 3 unacknowledged (last seen ${JSON.stringify(counts)})`,
      async () => {
        counts = await queueCounts(ORDERS);
        return counts.ready === 7 && counts.unacked === 3;
      },
    );
    expect(orders.running).toBe(3);
    expect(handled(orders, 'bounded-')).toHaveLength(3);

    orders.gate.open();
    await waitFor('all ten to be handled', () => handled(orders, 'bounded-').length === 10);
    expect(orders.maxRunning).toBe(3);
    await waitFor('every acknowledgement', async () => (await queueCounts(ORDERS)).unacked === 0);
  });

  it('settles each of many mixed successes and failures exactly once (a double ack would close the channel)', async () => {
    orders.failWith = (event) =>
      Number(event.orderId.split('-')[1]) % 4 === 0 ? new NonRetryableError('refused') : undefined;
    for (let n = 0; n < 40; n++) await app.publisher.publish(orderPlaced(`mixed-${n}`));

    await waitFor('all forty to be handled', () => handled(orders, 'mixed-').length === 40);
    const deadLetters = await broker.waitForMessages(`${ORDERS}.dlq`, 10);
    expect(deadLetters).toHaveLength(10);
    await waitFor('every acknowledgement', async () => (await queueCounts(ORDERS)).unacked === 0);
    // A marker after the forty, on the same channel: the broker applies the app's acks in order, so a second
    // ack of any of them sent before the marker's would have closed the channel, and the marker would be
    // handled again, redelivered, after the channel's error.
    await app.publisher.publish(orderPlaced('barrier-mixed'));
    await waitFor('the marker to be handled and acknowledged', async () => {
      if (handled(orders, 'barrier-').length === 0) return false;
      const { ready, unacked } = await queueCounts(ORDERS);
      return ready === 0 && unacked === 0;
    });
    expect(handled(orders, 'barrier-').map(({ ctx }) => ctx.redelivered)).toEqual([false]);

    const mixed = handled(orders, 'mixed-');
    expect(mixed.every(({ ctx }) => !ctx.redelivered)).toBe(true);
    expect(new Set(mixed.map(({ event }) => event.orderId)).size).toBe(40);
    expect(app.logger.find('warn', /channel (error|closed)/)).toEqual([]);
    expect(await queueCounts(ORDERS)).toMatchObject({ ready: 0, unacked: 0, consumers: 1 });
  });

  it('lets another consumer go on while one consumer is stalled (one channel per consumer)', async () => {
    orders.gate = new Gate();
    for (let n = 0; n < 6; n++) await app.publisher.publish(orderPlaced(`stalled-${n}`));
    await waitFor('the order consumer to be saturated', () => orders.running === 3);

    for (let n = 0; n < 20; n++) {
      await app.publisher.publish(Object.assign(new PaymentRequested(), { orderId: `independent-${n}` }));
    }
    await waitFor(
      'every payment to be handled while orders are stalled',
      () => payments.received.length === 20,
    );
    expect(orders.running).toBe(3);
    expect(handled(orders, 'stalled-')).toHaveLength(3);

    orders.gate.open();
    await waitFor('the stalled orders to finish', () => handled(orders, 'stalled-').length === 6);
  });
});
