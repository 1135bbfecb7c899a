import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Injectable,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { context, SpanKind, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { GetMessage } from 'amqplib';
import { IsString } from 'class-validator';
import { Consume, MessagePublisher, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { InMemoryTracing, parentSpanId } from './support/in-memory-tracing';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'trace.order-placed', idempotencyKey: (m: OrderPlaced) => `placed:${m.id}` })
class OrderPlaced {
  @IsString() id!: string;
}

@MessageType({ type: 'trace.order-paid', idempotencyKey: (m: OrderPaid) => `paid:${m.id}` })
class OrderPaid {
  @IsString() id!: string;
}

/** Records the span active when a Nest interceptor runs around a handler. */
@Injectable()
class SpanRecordingInterceptor implements NestInterceptor {
  static seen: Array<{ type: string; traceId?: string; spanId?: string }> = [];

  intercept(context: ExecutionContext, next: CallHandler) {
    const span = trace.getActiveSpan()?.spanContext();
    SpanRecordingInterceptor.seen.push({
      type: context.getType(),
      traceId: span?.traceId,
      spanId: span?.spanId,
    });
    return next.handle();
  }
}

const PLACED_QUEUE = uniqueQueue('trace-placed');
const PAID_QUEUE = uniqueQueue('trace-paid');

@Injectable()
class PaymentHandler {
  constructor(private readonly publisher: MessagePublisher) {}

  @Consume({ queue: PLACED_QUEUE })
  @UseInterceptors(SpanRecordingInterceptor)
  async onPlaced(event: OrderPlaced, _ctx: MessageContext): Promise<void> {
    await this.publisher.publishNow(Object.assign(new OrderPaid(), { id: event.id }));
  }
}

@Injectable()
class ShippingHandler {
  readonly shipped: string[] = [];

  @Consume({ queue: PAID_QUEUE })
  async onPaid(event: OrderPaid): Promise<void> {
    this.shipped.push(event.id);
  }
}

/** A W3C `traceparent` (version 00): trace id, parent (span) id, flags. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parts of a message's `traceparent` header; fails unless it has the exact W3C form. */
function traceparentOf(message: GetMessage): { traceId: string; parentId: string; flags: string } {
  const header: unknown = message.properties.headers?.traceparent;
  const text = Buffer.isBuffer(header) ? header.toString('utf8') : header;
  expect(text).toMatch(TRACEPARENT);
  const [, traceId, parentId, flags] = TRACEPARENT.exec(text as string)!;
  return { traceId, parentId, flags };
}

/** A trace id no span of the spec makes, for the forged and foreign headers. */
const FOREIGN_TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

/** Trace context through the broker, in one process with an in-memory span exporter. */
describe('tracing through the broker', () => {
  let broker: TestBroker;
  let tracing: InMemoryTracing;
  let database: MessagingDatabase;
  let app: MessagingTestApp;
  /** Bound to the app's exchange for every routing key: a copy of each message as the broker holds it. */
  let audit: string;
  /** Every message taken off the audit queue so far. */
  const auditLog: GetMessage[] = [];

  beforeAll(async () => {
    tracing = InMemoryTracing.start();
    broker = await TestBroker.connect();
    database = await createMessagingDatabase();
    audit = broker.name('trace-audit');
    const channel = await broker.openChannel();
    await channel.assertExchange(broker.name('events'), 'topic', { durable: true });
    await channel.assertQueue(audit, { durable: false });
    await channel.bindQueue(audit, broker.name('events'), '#');
    app = await MessagingTestApp.start(broker, {
      providers: [PaymentHandler, ShippingHandler, SpanRecordingInterceptor],
      options: { dataSource: database.dataSource },
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await database?.drop();
    await tracing?.stop();
  });

  /** The copy on the audit queue of the one message that `matches`. */
  async function audited(what: string, matches: (message: GetMessage) => boolean): Promise<GetMessage> {
    await waitFor(`${what} on the audit queue`, async () => {
      auditLog.push(...(await broker.getAll(audit)));
      return auditLog.some(matches);
    });
    const found = auditLog.filter(matches);
    expect(found).toHaveLength(1);
    return found[0];
  }

  const withId = (messageId: string) => (message: GetMessage) => message.properties.messageId === messageId;

  /** The one span named like `name` whose message id attribute is `messageId`, once it has finished. */
  async function spanOf(name: RegExp, messageId: string): Promise<ReadableSpan> {
    const of = () =>
      tracing.named(name).filter((span) => span.attributes['messaging.message.id'] === messageId);
    await waitFor(`the span ${name.source} of message ${messageId}`, () => of().length > 0);
    expect(of()).toHaveLength(1);
    return of()[0];
  }

  /** Publishes `order.placed` as another system would, with the `traceparent` header given. */
  async function publishPlacedFromOutside(
    id: string,
    messageId: string,
    traceparent: unknown,
  ): Promise<void> {
    await broker.publishRaw(
      { exchange: broker.name('events'), routingKey: 'trace.order-placed' },
      JSON.stringify({ id }),
      { type: 'trace.order-placed', messageId, contentType: 'application/json', headers: { traceparent } },
    );
  }

  it('carries the publisher’s trace through two hops, with Nest interceptors running inside the consumer span', async () => {
    const request = trace.getTracer('spec').startSpan('POST /orders', { kind: SpanKind.SERVER });
    await context.with(trace.setSpan(context.active(), request), () =>
      app.publisher.publishNow(Object.assign(new OrderPlaced(), { id: 'o-1' })),
    );
    request.end();
    await waitFor('o-1 shipped', () => app.get(ShippingHandler).shipped.includes('o-1'));
    await waitFor(
      'the shipping span',
      () => tracing.named(new RegExp(`^process ${PAID_QUEUE}$`)).length === 1,
    );

    const traceId = request.spanContext().traceId;
    const [placedProcess] = tracing.named(new RegExp(`^process ${PLACED_QUEUE}$`));
    const [paidProcess] = tracing.named(new RegExp(`^process ${PAID_QUEUE}$`));
    const creates = tracing.named(/^create /);
    const sends = tracing.named(/^send /);
    const byId = new Map(tracing.spans.map((span) => [span.spanContext().spanId, span]));

    for (const span of [placedProcess, paidProcess, ...creates, ...sends])
      expect(span.spanContext().traceId).toBe(traceId);
    const placedCreate = byId.get(parentSpanId(placedProcess)!)!;
    expect(placedCreate.name).toBe(`create ${broker.name('events')}`);
    expect(parentSpanId(placedCreate)).toBe(request.spanContext().spanId);
    const paidCreate = byId.get(parentSpanId(paidProcess)!)!;
    expect(paidCreate.kind).toBe(SpanKind.PRODUCER);
    expect(parentSpanId(paidCreate)).toBe(placedProcess.spanContext().spanId);
    expect(sends.map((span) => span.kind)).toEqual([SpanKind.CLIENT, SpanKind.CLIENT]);
    expect(SpanRecordingInterceptor.seen).toEqual([
      { type: 'rmq', traceId, spanId: placedProcess.spanContext().spanId },
    ]);
  });

  it('writes a W3C traceparent on each message it publishes: the publisher’s trace id, the create span as parent', async () => {
    const request = trace.getTracer('spec').startSpan('POST /orders', { kind: SpanKind.SERVER });
    const { messageId } = await context.with(trace.setSpan(context.active(), request), () =>
      app.publisher.publishNow(Object.assign(new OrderPlaced(), { id: 'w3c-direct' })),
    );
    request.end();

    const header = traceparentOf(await audited(`message ${messageId}`, withId(messageId)));
    const create = await spanOf(/^create /, messageId);
    const send = await spanOf(/^send /, messageId);
    expect(header).toEqual({
      traceId: request.spanContext().traceId,
      parentId: create.spanContext().spanId,
      flags: '01',
    });
    expect(parentSpanId(create)).toBe(request.spanContext().spanId);
    // The send span is the publisher's own step: consumers are children of the message's creation, not of it.
    expect(send.spanContext().traceId).toBe(header.traceId);
    expect(send.spanContext().spanId).not.toBe(header.parentId);
  });

  it('keeps the traceparent written in the transaction on a message the outbox relay publishes later', async () => {
    const request = trace.getTracer('spec').startSpan('POST /orders', { kind: SpanKind.SERVER });
    const { messageId } = await context.with(trace.setSpan(context.active(), request), () =>
      database.dataSource.transaction((manager) =>
        app.publisher.publish(Object.assign(new OrderPlaced(), { id: 'w3c-outbox' }), { manager }),
      ),
    );
    request.end();

    const header = traceparentOf(await audited(`relayed message ${messageId}`, withId(messageId)));
    const create = await spanOf(/^create /, messageId);
    const relaySend = await spanOf(/^send /, messageId);
    expect(header).toEqual({
      traceId: request.spanContext().traceId,
      parentId: create.spanContext().spanId,
      flags: '01',
    });
    expect(parentSpanId(create)).toBe(request.spanContext().spanId);
    // The relay runs outside the request: its send joins the trace under the creation context it read back.
    expect(relaySend.spanContext().traceId).toBe(header.traceId);
    expect(parentSpanId(relaySend)).toBe(header.parentId);
  });

  it('continues a well-formed traceparent from another system, as W3C trace context asks', async () => {
    await publishPlacedFromOutside(
      'w3c-foreign',
      'w3c-foreign-message',
      `00-${FOREIGN_TRACE_ID}-b7ad6b7169203331-01`,
    );

    const process = await spanOf(new RegExp(`^process ${PLACED_QUEUE}$`), 'w3c-foreign-message');
    expect(process.spanContext().traceId).toBe(FOREIGN_TRACE_ID);
    expect(parentSpanId(process)).toBe('b7ad6b7169203331');
  });

  it.each<[string, unknown]>([
    ['not a traceparent at all', 'not-a-traceparent'],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`],
    ['an all-zero parent id', `00-${FOREIGN_TRACE_ID}-0000000000000000-01`],
    ['version ff', `ff-${FOREIGN_TRACE_ID}-b7ad6b7169203331-01`],
    ['upper-case hex', `00-${FOREIGN_TRACE_ID.toUpperCase()}-B7AD6B7169203331-01`],
    ['a trace id one digit short', `00-${FOREIGN_TRACE_ID.slice(1)}-b7ad6b7169203331-01`],
    ['a number, not text', 42],
    ['bytes that are not UTF-8', Buffer.from([0xff, 0xfe, 0x00, 0x2d])],
  ])(
    'handles a delivery whose traceparent is %s in a fresh trace, and carries that trace on',
    async (_case, traceparent) => {
      const id = `forged-${Math.random().toString(16).slice(2)}`;
      const messageId = `${id}-message`;
      await publishPlacedFromOutside(id, messageId, traceparent);

      await waitFor(`${id} shipped`, () => app.get(ShippingHandler).shipped.includes(id));
      const process = await spanOf(new RegExp(`^process ${PLACED_QUEUE}$`), messageId);
      expect(parentSpanId(process)).toBeUndefined();
      expect(process.links).toEqual([]);
      expect(process.spanContext().traceId).not.toBe(FOREIGN_TRACE_ID);
      const paid = await audited(
        `the OrderPaid of ${id}`,
        (message) =>
          message.properties.type === 'trace.order-paid' &&
          (JSON.parse(message.content.toString()) as { id: string }).id === id,
      );
      expect(traceparentOf(paid).traceId).toBe(process.spanContext().traceId);
    },
  );
});
