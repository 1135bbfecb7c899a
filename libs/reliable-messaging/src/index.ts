export { ReliableMessagingModule } from './reliable-messaging.module';
export {
  RELIABLE_MESSAGING_MODULE_OPTIONS,
  RESOLVED_MESSAGING_OPTIONS,
} from './reliable-messaging-module-definition';
export type { ReliableMessagingModuleOptions, QueueType } from './reliable-messaging.options';
export { RELIABLE_MESSAGING_ENTITIES, RELIABLE_MESSAGING_MIGRATIONS } from './reliable-messaging.schema';
export type { OutboxOptions } from './outbox/outbox.options';
export { OutboxMessageEntity, type OutboxStatus } from './outbox/outbox-message.entity';
export { CreateOutbox1767225600000 } from './outbox/create-outbox.migration';
export { OutboxMonitor } from './outbox/outbox-monitor.service';
export type { OutboxBacklog, ParkedRow } from './outbox/outbox-store.service';
export { OutboxRelay, type OutboxRelayStats } from './outbox/outbox-relay.service';
export type { InboxOptions } from './inbox/inbox.options';
export { InboxMessageEntity } from './inbox/inbox-message.entity';
export { CreateInbox1767225600001 } from './inbox/create-inbox.migration';
export { InboxStats, type DuplicateDelivery } from './inbox/inbox-stats.service';
export type { RetryOptions, ErrorClass } from './retry/retry.options';
export { delayLevelNames, deliverExchangeName, DELAY_RESOLUTION_MS } from './retry/delay-levels';
export { DeadLetterMonitor, type DeadLetterQueueStats } from './dead-letter/dead-letter-monitor.service';
export { DeadLetterOperations } from './dead-letter-admin/dead-letter-operations.service';
export type { DeadLetterSelection } from './dead-letter-admin/dead-letter-selection';
export type {
  DeadLetterOperationOptions,
  DeadLetterOperationResult,
  DeadLetterListResult,
} from './dead-letter-admin/dead-letter-operation';
export type { DeadLetter } from './dead-letter/dead-letter-record';
export type { DeadLetterFilter } from './dead-letter-admin/dead-letter-filter';
export { DeadLetterAudit, type DeadLetterAuditRecord } from './dead-letter-admin/dead-letter-audit.service';
export {
  DeadLetterAuditEntity,
  type DeadLetterAuditAction,
  type DeadLetterAuditOutcome,
} from './dead-letter-admin/dead-letter-audit.entity';
export { CreateDeadLetterAudit1767225600003 } from './dead-letter-admin/create-dead-letter-audit.migration';
export { DeadLetterAdminModule } from './dead-letter-admin/http/dead-letter-admin.module';
export type { DeadLetterAdminOptions } from './dead-letter-admin/http/dead-letter-admin.options';
export {
  createDeadLetterCli,
  runDeadLetterCli,
  type DeadLetterCliIo,
} from './dead-letter-admin/cli/dead-letter-cli';
export { HEADERS, DEAD_LETTER_HEADERS, RMQ_CONTEXT_TYPE } from './reliable-messaging.constants';
export { Consume, type ConsumeOptions } from './decorators/consume.decorator';
export { Publish, type PublishDecoratorOptions } from './decorators/publish.decorator';
export { MessageType, type MessageTypeOptions } from './decorators/message-type.decorator';
export type { MessageContext } from './context/message-context';
export type { Envelope } from './envelope/envelope';
export { MessagePublisher, type PublishReceipt } from './publishing/message-publisher.service';
export type { PublishOptions, RawMessage } from './publishing/publish-options';
export type { AmqpConnection, ConnectionRole, ConnectionState } from './amqp/amqp-connection.service';
export { ConsumerConnection } from './amqp/consumer-connection.service';
export { PublisherConnection } from './amqp/publisher-connection.service';
export { ConsumerRegistry } from './consuming/consumer-registry.service';
export type { ConsumerStatus } from './consuming/consumer-runner';
export { MessagingLifecycle } from './lifecycle/messaging-lifecycle';
export { MessagingHealth } from './health/messaging-health.service';
export { MessagingMetrics } from './metrics/messaging-metrics.service';
export type { RateLimit } from './flow-control/rate-limit.middleware';
export type { OrderingOption } from './ordering/ordering.options';
export { VersionGuard, STALE_MESSAGES_METRIC, type VersionCheck } from './ordering/version-guard.service';
export { compareVersions, isNewerVersion, type Version } from './ordering/version';
export { ConsistentHashExchangeMissingError } from './errors/consistent-hash-exchange-missing.error';
export { HandlerDeadlineExceededError } from './errors/handler-deadline-exceeded.error';
export { NonRetryableError } from './errors/non-retryable.error';
export { RedeliveryLimitError } from './errors/redelivery-limit.error';
export { InvalidDeadLetterQueryError } from './errors/invalid-dead-letter-query.error';
export { DeadLetterNotFoundError } from './errors/dead-letter-not-found.error';
export { InvalidMessageError, type InvalidMessageReason } from './errors/invalid-message.error';
export { ConfigurationError } from './errors/configuration.error';
export { NoTransactionError } from './errors/no-transaction.error';
export { TopologyMismatchError } from './errors/topology-mismatch.error';
export {
  PublishError,
  PublishRejectedError,
  PublishTimeoutError,
  PayloadTooLargeError,
  UnroutableMessageError,
} from './errors/publish.error';
