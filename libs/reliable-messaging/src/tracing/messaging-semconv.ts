/**
 * The OpenTelemetry messaging semantic conventions this module follows (messaging spans, development status,
 * RabbitMQ extension). Kept here rather than imported from `@opentelemetry/semantic-conventions/incubating`,
 * whose experimental names may change in any minor release, so the module depends on `@opentelemetry/api` only.
 */
export const ATTR = {
  system: 'messaging.system',
  operationName: 'messaging.operation.name',
  operationType: 'messaging.operation.type',
  destinationName: 'messaging.destination.name',
  consumerGroup: 'messaging.consumer.group.name',
  messageId: 'messaging.message.id',
  conversationId: 'messaging.message.conversation_id',
  bodySize: 'messaging.message.body.size',
  routingKey: 'messaging.rabbitmq.destination.routing_key',
  deliveryTag: 'messaging.rabbitmq.message.delivery_tag',
  errorType: 'error.type',
  messageType: 'rm.message.type',
  attempt: 'rm.attempt',
  consumer: 'rm.consumer',
} as const;

/** `messaging.system` for every span of this module. */
export const MESSAGING_SYSTEM = 'rabbitmq';

/** The tracer's instrumentation scope name. */
export const TRACER_NAME = 'reliable-messaging';
