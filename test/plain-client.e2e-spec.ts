import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { IsInt, IsString } from 'class-validator';
import {
  Consume,
  HEADERS,
  MessagePublisher,
  MessageType,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'order.placed', idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
  @IsInt() totalCents!: number;
}

@MessageType({
  type: 'order.confirmed',
  version: '1.1',
  idempotencyKey: (m: OrderConfirmed) => `order-confirmed:${m.orderId}`,
})
class OrderConfirmed {
  @IsString() orderId!: string;
}

const QUEUE = uniqueQueue('plain-client');

/** Confirms every order it handles, so a plain client can read a message the module published from a handler. */
@Injectable()
class OrderHandler {
  readonly received: Array<{ event: OrderPlaced; ctx: MessageContext }> = [];

  constructor(private readonly publisher: MessagePublisher) {}

  @Consume({ queue: QUEUE })
  async onOrderPlaced(event: OrderPlaced, ctx: MessageContext): Promise<void> {
    this.received.push({ event, ctx });
    await this.publisher.publish(Object.assign(new OrderConfirmed(), { orderId: event.orderId }));
  }
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('a plain amqplib client and the module, as docs/envelope.md describes', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: OrderHandler;
  let exchange: string;
  const confirmations: ConsumeMessage[] = [];

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { providers: [OrderHandler] });
    handler = app.get(OrderHandler);
    exchange = `${broker.prefix}.events`;
    // The plain client's own queue for what the module publishes, bound by message type with a wildcard.
    const channel = await broker.openChannel();
    const mine = broker.name('plain-reader');
    await channel.assertQueue(mine, { durable: false });
    await channel.bindQueue(mine, exchange, 'order.*');
    await channel.consume(
      mine,
      (message) => {
        if (message) confirmations.push(message);
      },
      { noAck: true },
    );
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('handles the least a plain client may send (type and message_id) with the documented defaults', async () => {
    const messageId = randomUUID();
    const sentAt = Math.floor(Date.now() / 1000) - 60;
    await broker.publishRaw(
      { exchange, routingKey: 'order.placed' },
      JSON.stringify({ orderId: 'min-1', totalCents: 5 }),
      {
        type: 'order.placed',
        messageId,
        timestamp: sentAt,
      },
    );

    await waitFor('the minimal message', () =>
      handler.received.some(({ event }) => event.orderId === 'min-1'),
    );
    const { ctx } = handler.received.find(({ event }) => event.orderId === 'min-1')!;
    expect(ctx.envelope).toMatchObject({
      messageId,
      idempotencyKey: messageId,
      correlationId: messageId,
      schemaVersion: '1.0',
      occurredAt: new Date(sentAt * 1000),
      causationId: undefined,
    });
  });

  it('takes every value a plain client sets, as the docs example sends it', async () => {
    const orderId = randomUUID();
    const messageId = randomUUID();
    await broker.publishRaw(
      { exchange, routingKey: 'order.placed' },
      JSON.stringify({ orderId, totalCents: 1250, addedInALaterMinor: true }),
      {
        type: 'order.placed',
        messageId,
        contentType: 'application/json',
        persistent: true,
        mandatory: true,
        correlationId: 'checkout-9',
        timestamp: Math.floor(Date.now() / 1000),
        headers: {
          [HEADERS.idempotencyKey]: `order-placed:${orderId}`,
          [HEADERS.schemaVersion]: '1.3',
          [HEADERS.occurredAt]: '2026-03-04T05:06:07.089Z',
          [HEADERS.causationId]: 'cart-checked-out-1',
          'x-tenant': 'acme',
        },
      },
    );

    await waitFor('the full message', () => handler.received.some(({ event }) => event.orderId === orderId));
    const { event, ctx } = handler.received.find(({ event }) => event.orderId === orderId)!;
    expect({ ...event }).toEqual({ orderId, totalCents: 1250 });
    expect(ctx.envelope).toMatchObject({
      messageId,
      idempotencyKey: `order-placed:${orderId}`,
      correlationId: 'checkout-9',
      causationId: 'cart-checked-out-1',
      schemaVersion: '1.3',
      occurredAt: new Date('2026-03-04T05:06:07.089Z'),
      headers: expect.objectContaining({ 'x-tenant': 'acme' }),
    });
  });

  it("lets a plain client read the module's messages: properties and headers as documented", async () => {
    const trigger = handler.received.find(({ event }) => event.orderId === 'min-1')!.ctx.envelope;

    const confirmation = (m: ConsumeMessage) =>
      m.properties.type === 'order.confirmed' &&
      (JSON.parse(m.content.toString()) as { orderId: string }).orderId === 'min-1';
    await waitFor('the confirmation of the minimal order', () => confirmations.some(confirmation));
    const message = confirmations.find(confirmation)!;
    expect(message.fields.routingKey).toBe('order.confirmed');
    expect(message.properties).toMatchObject({
      type: 'order.confirmed',
      messageId: expect.stringMatching(UUID_V7),
      contentType: 'application/json',
      correlationId: trigger.correlationId,
      appId: app.connectionName,
      deliveryMode: 2,
      timestamp: expect.any(Number),
    });
    const headers = message.properties.headers ?? {};
    expect(headers).toMatchObject({
      [HEADERS.idempotencyKey]: 'order-confirmed:min-1',
      [HEADERS.schemaVersion]: '1.1',
      [HEADERS.causationId]: trigger.messageId,
      [HEADERS.occurredAt]: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(
      Object.keys(headers).filter((name) => name.startsWith('rm-') && !documentedHeaders.has(name)),
    ).toEqual([]);
  });
});

/** Every `rm-` header docs/envelope.md names for a message the module publishes. */
const documentedHeaders = new Set<string>([
  HEADERS.idempotencyKey,
  HEADERS.schemaVersion,
  HEADERS.occurredAt,
  HEADERS.causationId,
  HEADERS.orderingKey,
  HEADERS.attempt,
  HEADERS.firstFailureAt,
  HEADERS.redeliveries,
  HEADERS.originalExchange,
  HEADERS.originalRoutingKey,
  HEADERS.retryQueue,
]);
