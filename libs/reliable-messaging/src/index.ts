export { ReliableMessagingModule } from './reliable-messaging.module';
export {
  RELIABLE_MESSAGING_MODULE_OPTIONS,
  RESOLVED_MESSAGING_OPTIONS,
} from './reliable-messaging-module-definition';
export type { ReliableMessagingModuleOptions, QueueType } from './reliable-messaging.options';
export { HEADERS, DEAD_LETTER_HEADERS, RMQ_CONTEXT_TYPE } from './reliable-messaging.constants';
export { Consume, type ConsumeOptions } from './decorators/consume.decorator';
export { Publish, type PublishDecoratorOptions } from './decorators/publish.decorator';
export { MessageType, type MessageTypeOptions } from './decorators/message-type.decorator';
export type { MessageContext } from './context/message-context';
export type { Envelope } from './envelope/envelope';
export { MessagePublisher, type PublishReceipt } from './publishing/message-publisher.service';
export type { PublishOptions, RawMessage } from './publishing/publish-options';
export { AmqpConnection } from './amqp/amqp-connection.service';
export { ConsumerRegistry } from './consuming/consumer-registry.service';
export type { ConsumerStatus } from './consuming/consumer-runner';
export { MessagingLifecycle } from './shutdown/messaging-lifecycle.service';
export { NonRetryableError } from './errors/non-retryable.error';
export { InvalidMessageError, type InvalidMessageReason } from './errors/invalid-message.error';
export { ConfigurationError } from './errors/configuration.error';
export { TopologyMismatchError } from './errors/topology-mismatch.error';
export {
  PublishError,
  PublishRejectedError,
  PublishTimeoutError,
  PayloadTooLargeError,
  UnroutableMessageError,
} from './errors/publish.error';
