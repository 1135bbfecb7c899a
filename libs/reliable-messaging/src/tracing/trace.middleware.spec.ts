import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Channel, ConsumeMessage } from 'amqplib';
import { InMemoryTracing, parentSpanId } from '../../../../test/support/in-memory-tracing';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { InboundDelivery } from '../pipeline/inbound-delivery';
import { traceStage } from './trace.middleware';
import { injectCreationContext } from './messaging-tracer';
import { loadOpenTelemetry } from './opentelemetry';

const consumer = { name: 'Billing.onOrderPlaced', queue: 'billing.order-placed' } as ConsumerPlan;
const channel = { ack: () => undefined, nack: () => undefined } as unknown as Channel;

function delivery(headers: Record<string, unknown>): InboundDelivery {
  const raw = {
    content: Buffer.from('{}'),
    fields: {
      deliveryTag: 7,
      redelivered: false,
      exchange: 'events',
      routingKey: 'order.placed',
      consumerTag: 'c',
    },
    properties: { messageId: 'm-1', correlationId: 'c-1', type: 'order.placed', headers },
  } as unknown as ConsumeMessage;
  return new InboundDelivery(raw, consumer, channel);
}

describe('traceStage', () => {
  let tracing: InMemoryTracing;

  beforeAll(async () => {
    await loadOpenTelemetry();
    tracing = InMemoryTracing.start();
  });
  afterAll(async () => {
    await tracing.stop();
  });
  beforeEach(() => tracing.reset());

  it('runs the handler in a CONSUMER "process <queue>" span, child of the create span the headers carry', async () => {
    const headers: Record<string, unknown> = {};
    const request = trace.getTracer('spec').startSpan('POST /orders');
    context.with(trace.setSpan(ROOT_CONTEXT, request), () =>
      injectCreationContext(headers, {
        exchange: 'events',
        routingKey: 'order.placed',
        messageId: 'm-1',
        type: 'order.placed',
      }),
    );
    request.end();
    let activeInHandler: string | undefined;

    await traceStage(consumer)(async () => {
      activeInHandler = trace.getActiveSpan()?.spanContext().spanId;
    })(delivery(headers));

    const [create] = tracing.named(/^create /);
    const [process] = tracing.named(/^process /);
    expect(create.name).toBe('create events');
    expect(create.kind).toBe(SpanKind.PRODUCER);
    expect(parentSpanId(create)).toBe(request.spanContext().spanId);
    expect(process.name).toBe('process billing.order-placed');
    expect(process.kind).toBe(SpanKind.CONSUMER);
    expect(process.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(parentSpanId(process)).toBe(create.spanContext().spanId);
    expect(process.links.map((link) => link.context.spanId)).toEqual([create.spanContext().spanId]);
    expect(activeInHandler).toBe(process.spanContext().spanId);
    expect(process.attributes).toMatchObject({
      'messaging.system': 'rabbitmq',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': 'billing.order-placed',
      'messaging.rabbitmq.destination.routing_key': 'order.placed',
      'messaging.rabbitmq.message.delivery_tag': 7,
      'messaging.message.id': 'm-1',
      'messaging.message.conversation_id': 'c-1',
      'rm.consumer': 'Billing.onOrderPlaced',
      'rm.attempt': 1,
    });
    expect(process.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('reads trace headers that arrive as Buffers (a publisher that wrote byte arrays)', async () => {
    const headers: Record<string, unknown> = {};
    const parent = trace.getTracer('spec').startSpan('producer');
    propagation.inject(trace.setSpan(ROOT_CONTEXT, parent), headers);
    parent.end();

    await traceStage(consumer)(async () => undefined)(
      delivery({ traceparent: Buffer.from(headers.traceparent as string) }),
    );

    expect(parentSpanId(tracing.named(/^process /)[0])).toBe(parent.spanContext().spanId);
  });

  it('starts a new trace for a message without trace headers, and one with a malformed traceparent', async () => {
    await traceStage(consumer)(async () => undefined)(delivery({}));
    await traceStage(consumer)(async () => undefined)(delivery({ traceparent: 'not-a-traceparent' }));

    const spans = tracing.named(/^process /);
    expect(spans).toHaveLength(2);
    for (const span of spans) {
      expect(parentSpanId(span)).toBeUndefined();
      expect(span.links).toEqual([]);
    }
  });

  it('records a failure on the span with error.type and passes the same error on', async () => {
    const failure = new TypeError('card declined');

    await expect(
      traceStage(consumer)(async () => {
        throw failure;
      })(delivery({})),
    ).rejects.toBe(failure);

    const [span] = tracing.named(/^process /);
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'card declined' });
    expect(span.attributes['error.type']).toBe('TypeError');
    expect(span.events.map((event) => event.name)).toEqual(['exception']);
  });
});
