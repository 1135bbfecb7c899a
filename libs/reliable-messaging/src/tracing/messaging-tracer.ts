import type { Attributes, Context, Span, SpanContext, Tracer } from '@opentelemetry/api';
import type { OutboundMessage } from '../envelope/envelope';
import { amqpHeaderGetter, amqpHeaderSetter } from './header-carrier';
import { ATTR, MESSAGING_SYSTEM, TRACER_NAME } from './messaging-semconv';
import { otel } from './opentelemetry';
import { isTracingRegistered } from './tracing-registered';

// NOTE: the tracer is looked up on each use rather than kept: a tracer taken before an SDK is registered (or
// after one is replaced, as tests do) would keep reporting to the provider of that moment. With no SDK every
// call is a no-op. Everything below runs only once isTracingRegistered() said yes, so the API is loaded.
function tracer(): Tracer {
  return otel().trace.getTracer(TRACER_NAME);
}

/** What a `create` span describes: one message about to be written (to the outbox or the broker). */
export interface CreatedMessage {
  exchange: string;
  routingKey: string;
  messageId: string;
  type: string;
  correlationId?: string;
}

/** The trace context a message carries in its headers, on top of an empty context. */
export function extractMessageContext(headers: Record<string, unknown> | undefined): Context {
  const { propagation, ROOT_CONTEXT } = otel();
  return propagation.extract(ROOT_CONTEXT, headers ?? {}, amqpHeaderGetter);
}

/** The span context a message was created in, if it carries a valid one. */
export function creationContextOf(headers: Record<string, unknown> | undefined): SpanContext | undefined {
  const { trace } = otel();
  const spanContext = trace.getSpanContext(extractMessageContext(headers));
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}

/**
 * Gives a new message its creation context: a PRODUCER `create <exchange>` span, child of the active context
 * (the HTTP request or the handler that publishes), injected into the headers and ended at once. The outbox row
 * stores these headers, so the relay's later publish and every consumer join the trace of the request.
 * Without a tracer provider or propagator registered there is nothing to inject.
 */
export function injectCreationContext(headers: Record<string, unknown>, message: CreatedMessage): void {
  if (!isTracingRegistered()) return;
  const { context, propagation, SpanKind, trace } = otel();
  const span = tracer().startSpan(`create ${message.exchange}`, {
    kind: SpanKind.PRODUCER,
    attributes: {
      [ATTR.system]: MESSAGING_SYSTEM,
      [ATTR.operationName]: 'create',
      [ATTR.operationType]: 'create',
      [ATTR.destinationName]: message.exchange,
      [ATTR.routingKey]: message.routingKey,
      [ATTR.messageId]: message.messageId,
      [ATTR.conversationId]: message.correlationId,
      [ATTR.messageType]: message.type,
    },
  });
  propagation.inject(trace.setSpan(context.active(), span), headers, amqpHeaderSetter);
  span.end();
}

/**
 * Runs one publish to the broker in a `send <exchange>` span that links to the message's creation context.
 * Its parent is the active span when there is one (a direct publish), else the creation context (the relay,
 * which runs outside any request), so the send shows up in the trace that created the message. The span is
 * CLIENT when the message carries a creation context (its own context is not injected) and PRODUCER otherwise.
 * Without a tracer provider or propagator registered it only runs `publish`.
 */
export function traceSend<T>(message: OutboundMessage, publish: () => Promise<T>): Promise<T> {
  return isTracingRegistered() ? tracedSend(message, publish) : publish();
}

async function tracedSend<T>(message: OutboundMessage, publish: () => Promise<T>): Promise<T> {
  const { context, SpanKind, trace } = otel();
  const creation = creationContextOf(message.properties.headers);
  const active = context.active();
  const activeSpan = trace.getSpanContext(active);
  const parent =
    creation && !(activeSpan && trace.isSpanContextValid(activeSpan))
      ? trace.setSpanContext(active, creation)
      : active;
  const span = tracer().startSpan(
    `send ${message.exchange}`,
    {
      kind: creation ? SpanKind.CLIENT : SpanKind.PRODUCER,
      links: creation ? [{ context: creation }] : undefined,
      attributes: {
        [ATTR.system]: MESSAGING_SYSTEM,
        [ATTR.operationName]: 'send',
        [ATTR.operationType]: 'send',
        [ATTR.destinationName]: message.exchange,
        [ATTR.routingKey]: message.routingKey,
        [ATTR.messageId]: message.properties.messageId,
        [ATTR.bodySize]: message.body.length,
      },
    },
    parent,
  );
  try {
    return await publish();
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Starts the CONSUMER `process <queue>` span of a delivery, child of the creation context its headers carry
 * (linked to it too, as the conventions ask), and returns it with the context to run the handler in.
 */
export function startProcessSpan(
  queue: string,
  headers: Record<string, unknown> | undefined,
  attributes: Attributes,
): { span: Span; context: Context } {
  const { SpanKind, trace } = otel();
  const parent = extractMessageContext(headers);
  const creation = trace.getSpanContext(parent);
  const span = tracer().startSpan(
    `process ${queue}`,
    {
      kind: SpanKind.CONSUMER,
      links: creation && trace.isSpanContextValid(creation) ? [{ context: creation }] : undefined,
      attributes: {
        [ATTR.system]: MESSAGING_SYSTEM,
        [ATTR.operationName]: 'process',
        [ATTR.operationType]: 'process',
        [ATTR.destinationName]: queue,
        ...attributes,
      },
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Marks a span failed with the error's class as `error.type`. */
export function recordFailure(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  const failure = error instanceof Error ? error : new Error(String(error));
  span.recordException(failure);
  span.setAttribute(ATTR.errorType, failure.name || 'Error');
  span.setStatus({ code: otel().SpanStatusCode.ERROR, message: failure.message });
}
