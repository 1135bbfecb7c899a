import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import {
  RELIABLE_MESSAGING_MODULE_OPTIONS,
  ReliableMessagingConfigurableModule,
} from './reliable-messaging-module-definition';
import { RESOLVED_MESSAGING_OPTIONS, SAGA_TIMEOUT_SERVICES } from './reliable-messaging.constants';
import type { SagaTimeoutServices } from './saga/saga-timeout-services';
import { resolveOptions, type ReliableMessagingModuleOptions } from './options/reliable-messaging.options';
import { ConsumerConnection } from './amqp/consumer-connection.service';
import { PublisherConnection } from './amqp/publisher-connection.service';
import { ConfirmPublisher } from './amqp/confirm-publisher';
import { TopologyService } from './amqp/topology.service';
import { MessageContextStorage } from './context/message-context.storage';
import { ConsumerRegistry } from './consuming/consumer-registry.service';
import { DeadLetterService } from './dead-letter/dead-letter.service';
import { MessagingExplorer } from './discovery/messaging-explorer.service';
import { MessagingMetadataAccessor } from './discovery/messaging-metadata.accessor';
import { MessagingRegistrar } from './discovery/messaging-registrar.service';
import { EnvelopeFactory } from './envelope/envelope.factory';
import { ReliabilityPipeline } from './pipeline/reliability-pipeline';
import { MessagePublisher } from './publishing/message-publisher.service';
import { FailureHandler } from './retry/failure-handler.service';
import { RetryScheduler } from './retry/retry-scheduler.service';
import { ReplyPublisher } from './request-reply/reply-publisher.service';
import { RequestChannel } from './request-reply/request-channel.service';
import { DelayTopology } from './retry/delay-topology.service';
import { DeadLetterMonitor } from './dead-letter/dead-letter-monitor.service';
import { MessagingLifecycle } from './lifecycle/messaging-lifecycle';
import { ShutdownSignal } from './shutdown/shutdown-signal';
import { OverdueHandlers } from './flow-control/overdue-handlers.service';
import { MessagingMetrics } from './metrics/messaging-metrics.service';
import { MetricsCollector } from './metrics/metrics-collector.service';
import { QueueDepthMonitor } from './metrics/queue-depth.monitor';
import { SchemaCheck } from './database/schema-check.service';
import { TransactionContext } from './database/transaction-context.service';
import { DatabaseAvailability } from './database/database-availability.service';
import { OutboxCommitSignal } from './outbox/outbox-commit-signal.service';
import { OutboxMonitor } from './outbox/outbox-monitor.service';
import { OutboxPruner } from './outbox/outbox-pruner.service';
import { OutboxRelay } from './outbox/outbox-relay.service';
import { OutboxStore } from './outbox/outbox-store.service';
import { OutboxWriter } from './outbox/outbox-writer.service';
import { InboxPruner } from './inbox/inbox-pruner.service';
import { InboxStats } from './inbox/inbox-stats.service';
import { InboxStore } from './inbox/inbox-store.service';
import { MemoryInbox } from './inbox/memory-inbox';
import { LaneDirectory } from './lanes/lane-directory.service';
import { LaneTopology } from './lanes/lane-topology.service';
import { OrderingTopology } from './ordering/ordering-topology.service';
import { VersionGuard } from './ordering/version-guard.service';
import { loadOpenTelemetry, OPENTELEMETRY_LOADER } from './tracing/opentelemetry';
import { EventPatternBridge } from './microservices/event-pattern-bridge';
import { ClaimCheckReader } from './claim-check/claim-check-reader.service';
import { ClaimCheckWriter } from './claim-check/claim-check-writer.service';
import { DeadLetterClaimCheck } from './claim-check/dead-letter-claim-check.service';
import { ClaimCheckPruner } from './claim-check/claim-check-pruner.service';
import { PostgresClaimCheckStore } from './claim-check/postgres-claim-check.store';
import { SagaInstances } from './saga/saga-instances.service';
import { MemorySagaStore } from './saga/memory-saga-store';
import { ScheduledCommitSignal } from './scheduling/scheduled-commit-signal.service';
import { ScheduledMessages } from './scheduling/scheduled-messages.service';
import { ScheduledPromoter } from './scheduling/scheduled-promoter.service';
import { ScheduledRepublisher } from './scheduling/scheduled-republisher.service';
import { BrokerDelayWriter } from './scheduling/broker-delay-writer.service';
import { ScheduledStore } from './scheduling/scheduled-store.service';
import { ScheduledWriter } from './scheduling/scheduled-writer.service';

/**
 * Reliable messaging over RabbitMQ. Import once with `forRoot()` / `forRootAsync()` (global by default);
 * decorate provider methods with `@Consume()` and `@Publish()`, or inject `MessagePublisher`; declare sagas with
 * `@Saga()` and `@SagaStep()`.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RESOLVED_MESSAGING_OPTIONS,
      useFactory: (options: ReliableMessagingModuleOptions) =>
        resolveOptions(options, {
          databaseClaimCheckStore: (dataSource) => new PostgresClaimCheckStore(dataSource),
        }),
      inject: [RELIABLE_MESSAGING_MODULE_OPTIONS],
    },
    { provide: OPENTELEMETRY_LOADER, useFactory: loadOpenTelemetry },
    ConsumerConnection,
    PublisherConnection,
    ConfirmPublisher,
    TopologyService,
    MessageContextStorage,
    EnvelopeFactory,
    DeadLetterService,
    FailureHandler,
    RetryScheduler,
    RequestChannel,
    ReplyPublisher,
    DelayTopology,
    DeadLetterMonitor,
    ReliabilityPipeline,
    ConsumerRegistry,
    MessagePublisher,
    MessagingMetadataAccessor,
    MessagingExplorer,
    MessagingRegistrar,
    MessagingLifecycle,
    OverdueHandlers,
    MessagingMetrics,
    MetricsCollector,
    QueueDepthMonitor,
    SchemaCheck,
    TransactionContext,
    DatabaseAvailability,
    OutboxStore,
    OutboxWriter,
    OutboxCommitSignal,
    OutboxRelay,
    OutboxMonitor,
    OutboxPruner,
    ScheduledStore,
    ScheduledWriter,
    ScheduledPromoter,
    ScheduledCommitSignal,
    ScheduledMessages,
    ScheduledRepublisher,
    BrokerDelayWriter,
    {
      provide: SAGA_TIMEOUT_SERVICES,
      useFactory: (publisher: MessagePublisher, scheduled: ScheduledMessages): SagaTimeoutServices => ({
        publisher,
        scheduled,
        now: () => Date.now(),
      }),
      inject: [MessagePublisher, ScheduledMessages],
    },
    InboxStore,
    InboxStats,
    InboxPruner,
    MemoryInbox,
    MemorySagaStore,
    ShutdownSignal,
    OrderingTopology,
    LaneTopology,
    LaneDirectory,
    VersionGuard,
    EventPatternBridge,
    ClaimCheckReader,
    ClaimCheckWriter,
    ClaimCheckPruner,
    DeadLetterClaimCheck,
    SagaInstances,
  ],
  exports: [
    MessagePublisher,
    ScheduledMessages,
    ConsumerConnection,
    PublisherConnection,
    ConsumerRegistry,
    ScheduledRepublisher,
    MessagingLifecycle,
    MessagingMetrics,
    OutboxMonitor,
    OutboxRelay,
    InboxStats,
    VersionGuard,
    SagaInstances,
    DeadLetterMonitor,
    QueueDepthMonitor,
    TransactionContext,
    ClaimCheckPruner,
    RESOLVED_MESSAGING_OPTIONS,
    // What operator tooling builds on (see operations.ts): nestjs-reliable-messaging-admin injects these.
    ConfirmPublisher,
    OutboxStore,
    ClaimCheckReader,
    DeadLetterClaimCheck,
    // For the modules of the package's other entry points (/health, /microservices), not for apps.
    DatabaseAvailability,
    OverdueHandlers,
    EventPatternBridge,
  ],
})
export class ReliableMessagingModule extends ReliableMessagingConfigurableModule {}
