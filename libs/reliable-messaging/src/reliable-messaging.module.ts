import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import {
  RELIABLE_MESSAGING_MODULE_OPTIONS,
  RESOLVED_MESSAGING_OPTIONS,
  ReliableMessagingConfigurableModule,
} from './reliable-messaging-module-definition';
import { resolveOptions, type ReliableMessagingModuleOptions } from './reliable-messaging.options';
import { AmqpConnection } from './amqp/amqp-connection.service';
import { ConfirmPublisher } from './amqp/confirm-publisher';
import { TopologyService } from './amqp/topology.service';
import { MessageContextStorage } from './context/message-context.storage';
import { ConsumerRegistry } from './consuming/consumer-registry.service';
import { DeadLetterService } from './dead-letter/dead-letter.service';
import { MessagingExplorer } from './discovery/messaging-explorer.service';
import { EnvelopeFactory } from './envelope/envelope.factory';
import { ReliabilityPipeline } from './pipeline/reliability-pipeline';
import { MessagePublisher } from './publishing/message-publisher.service';
import { FailureHandler } from './retry/failure-handler.service';
import { MessagingLifecycle } from './shutdown/messaging-lifecycle.service';

/**
 * Reliable messaging over RabbitMQ. Import once with `forRoot()` / `forRootAsync()` (global by default);
 * decorate provider methods with `@Consume()` and `@Publish()`, or inject `MessagePublisher`.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RESOLVED_MESSAGING_OPTIONS,
      useFactory: (options: ReliableMessagingModuleOptions) => resolveOptions(options),
      inject: [RELIABLE_MESSAGING_MODULE_OPTIONS],
    },
    AmqpConnection,
    ConfirmPublisher,
    TopologyService,
    MessageContextStorage,
    EnvelopeFactory,
    DeadLetterService,
    FailureHandler,
    ReliabilityPipeline,
    ConsumerRegistry,
    MessagePublisher,
    MessagingExplorer,
    MessagingLifecycle,
  ],
  exports: [
    MessagePublisher,
    AmqpConnection,
    ConsumerRegistry,
    MessagingLifecycle,
    RESOLVED_MESSAGING_OPTIONS,
  ],
})
export class ReliableMessagingModule extends ReliableMessagingConfigurableModule {}
