import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { TopologyService } from '../amqp/topology.service';
import { planConsumers } from '../consuming/consumer-planner';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { TransactionContext } from '../database/transaction-context.service';
import { MessagePublisher } from '../publishing/message-publisher.service';
import { wrapPublishMethod } from '../publishing/publish-method';
import { EventPatternBridge } from '../microservices/event-pattern-bridge';
import { MessagingExplorer } from './messaging-explorer.service';

/**
 * At module init, turns what the explorer found into what runs: every `@Publish()` method wrapped so that what
 * it returns is published, and every `@Consume()` handler resolved into its validated consumer plans (a wrong
 * option fails startup here, before anything connects), registered with their pipelines.
 */
@Injectable()
export class MessagingRegistrar implements OnModuleInit {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(
    private readonly explorer: MessagingExplorer,
    private readonly bridge: EventPatternBridge,
    private readonly registry: ConsumerRegistry,
    private readonly topology: TopologyService,
    private readonly publisher: MessagePublisher,
    private readonly transactions: TransactionContext,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  onModuleInit(): void {
    const serveEvents = this.bridge.connected;
    const { consumers, publishers } = this.explorer.explore(
      serveEvents ? { transportId: this.bridge.transportId, appId: this.options.appId } : undefined,
    );
    this.bridge.planned = true;
    // First, so that a handler that is also a `@Publish()` method runs as the wrapper.
    for (const { instance, methodName, options } of publishers) {
      wrapPublishMethod(instance, methodName, options, this.publisher, this.transactions);
    }
    const plans = planConsumers(consumers, {
      options: this.options,
      queueArguments: (queue, queueType, extra) => this.topology.queueArguments(queue, queueType, extra),
      warn: (message) => this.logger.warn(message),
    });
    // A process with consumers off (a publisher, the relay, the dead-letter tools) still plans them: their
    // options are checked the same, and the dead-letter tools read their queues.
    this.registry.register(this.options.consumersEnabled ? plans : [], plans);
  }
}
