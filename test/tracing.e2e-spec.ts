import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Injectable,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { IsString } from 'class-validator';
import { Consume, MessagePublisher, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { InMemoryTracing, parentSpanId } from './support/in-memory-tracing';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
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

/** Trace context through the broker, in one process with an in-memory span exporter. */
describe('tracing through the broker', () => {
  let broker: TestBroker;
  let tracing: InMemoryTracing;
  let app: MessagingTestApp;

  beforeAll(async () => {
    tracing = InMemoryTracing.start();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [PaymentHandler, ShippingHandler, SpanRecordingInterceptor],
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await tracing?.stop();
  });

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
});
