import { Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import type { DiscoveredConsumer } from './discovered-consumer';
import { RMQ_CONTEXT_TYPE } from '../reliable-messaging.constants';
import { ConfigurationError } from '../errors/configuration.error';
import type { PublishDecoratorOptions } from '../decorators/publish.decorator';
import { eventPatternConsumer } from '../microservices/event-pattern-consumers';
import { MessagingMetadataAccessor } from './messaging-metadata.accessor';

/** A `@Publish()` method found at startup. */
export interface DiscoveredPublisher {
  instance: Record<string, unknown>;
  methodName: string;
  options: PublishDecoratorOptions;
}

/**
 * Finds the `@Consume()`, `@SagaStep()` and `@Publish()` methods of the app's providers and controllers, including those made
 * by `useValue` and `useFactory`. Request-scoped and transient providers have no single instance to run a
 * handler on: their decorated methods are skipped with a warning. It finds; the registrar resolves.
 */
@Injectable()
export class MessagingExplorer {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly metadata: MessagingMetadataAccessor,
  ) {}

  /**
   * Every `@Consume()`, `@SagaStep()` and `@Publish()` method; with `eventPatterns` (ReliableMessagingTransport is connected),
   * every `@EventPattern()` method it serves too.
   */
  explore(eventPatterns?: { transportId: symbol; appId: string }): {
    consumers: DiscoveredConsumer[];
    publishers: DiscoveredPublisher[];
  } {
    const consumers: DiscoveredConsumer[] = [];
    const publishers: DiscoveredPublisher[] = [];
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance) as object | null;
      if (!prototype) continue;
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = instance[methodName];
        if (typeof method !== 'function') continue;
        const consume = this.metadata.consumeOptions(method);
        const publish = this.metadata.publishOptions(method);
        const step = this.metadata.sagaStep(method);
        if ((consume || publish || step) && !this.isStatic(wrapper, methodName)) continue;
        if (step) {
          if (consume) {
            // One method, two consumers on two queues, would run the step's work twice per message.
            throw new ConfigurationError(
              `${instance.constructor.name}.${methodName} has both @Consume() and @SagaStep(); keep one`,
            );
          }
          consumers.push({
            instance,
            methodName,
            options: { queue: '' },
            payloadParameterType: step.message,
            decorator: '@SagaStep',
            contextType: RMQ_CONTEXT_TYPE,
            moduleKey: wrapper.host?.token,
            saga: { saga: this.metadata.sagaOptions(instance.constructor), step },
          });
        }
        if (consume) {
          const payloadParameterType = this.metadata.payloadParameterType(prototype, methodName);
          consumers.push({
            instance,
            methodName,
            options: consume,
            payloadParameterType,
            decorator: '@Consume',
            contextType: RMQ_CONTEXT_TYPE,
            moduleKey: wrapper.host?.token,
          });
        }
        if (publish) publishers.push({ instance, methodName, options: publish });
        const event =
          eventPatterns &&
          eventPatternConsumer(
            instance,
            methodName,
            method,
            this.metadata.payloadParameterType(prototype, methodName),
            eventPatterns,
          );
        if (event && this.isStatic(wrapper, methodName)) {
          consumers.push({ ...event, moduleKey: wrapper.host?.token });
        }
      }
    }
    return { consumers, publishers };
  }

  private isStatic(wrapper: InstanceWrapper, methodName: string): boolean {
    if (wrapper.isDependencyTreeStatic() && !wrapper.isTransient) return true;
    this.logger.warn(
      `${wrapper.name as string}.${methodName} is request-scoped or transient; messaging decorators there are skipped`,
    );
    return false;
  }
}
