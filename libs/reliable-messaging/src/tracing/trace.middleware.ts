import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { MessageHandler, MessageMiddleware } from '../pipeline/message-middleware';
import { ATTR } from './messaging-semconv';
import { recordFailure, startProcessSpan } from './messaging-tracer';
import { otel } from './opentelemetry';
import { isTracingRegistered } from './tracing-registered';

/**
 * Runs the rest of the pipeline in a CONSUMER `process <queue>` span whose parent is the trace context the
 * message carries, so the handler, Nest interceptors around it and everything it publishes belong to the
 * trace of the request that caused the message. A failure is recorded on the span and passed on unchanged.
 * Without an OpenTelemetry SDK registered every call here is a no-op, so the stage steps aside.
 */
export function traceStage(consumer: Pick<ConsumerPlan, 'name' | 'queue'>): MessageMiddleware {
  return (next) => {
    const traced: MessageHandler = async (delivery) => {
      const { properties, fields } = delivery.raw;
      const { span, context: spanContext } = startProcessSpan(consumer.queue, properties.headers, {
        [ATTR.consumer]: consumer.name,
        [ATTR.routingKey]: fields.routingKey,
        [ATTR.deliveryTag]: fields.deliveryTag,
        [ATTR.messageId]: typeof properties.messageId === 'string' ? properties.messageId : undefined,
        [ATTR.conversationId]:
          typeof properties.correlationId === 'string'
            ? properties.correlationId
            : typeof properties.messageId === 'string'
              ? properties.messageId
              : undefined,
        [ATTR.bodySize]: delivery.raw.content.length,
      });
      try {
        await otel().context.with(spanContext, () => next(delivery));
      } catch (error) {
        recordFailure(span, error);
        throw error;
      } finally {
        if (span.isRecording()) {
          span.setAttribute(ATTR.attempt, delivery.attempt);
          if (delivery.envelope) span.setAttribute(ATTR.messageType, delivery.envelope.type);
        }
        span.end();
      }
    };
    return (delivery) => (isTracingRegistered() ? traced(delivery) : next(delivery));
  };
}
