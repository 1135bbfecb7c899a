import { Inject, Injectable, Logger, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { CONSUME_METADATA, PUBLISH_METADATA } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import {
  assertInteger,
  assertName,
  assertQueueType,
  type ResolvedMessagingOptions,
} from '../reliable-messaging.options';
import type { ConsumeOptions } from '../decorators/consume.decorator';
import type { PublishDecoratorOptions } from '../decorators/publish.decorator';
import { getMessageDefinition } from '../decorators/message-type.decorator';
import { ConfigurationError } from '../errors/configuration.error';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { TopologyService } from '../amqp/topology.service';
import { MessagePublisher } from '../publishing/message-publisher.service';
import { planConsumerOrdering } from '../ordering/ordering-plan';
import { TransactionContext } from '../database/transaction-context.service';

const PRIMITIVES = new Set<unknown>([Object, String, Number, Boolean, Array, Promise, undefined]);

/**
 * Finds `@Consume()` and `@Publish()` methods on providers at startup. Consumers are resolved and validated
 * into ConsumerDefinitions (a bad option fails startup with a message saying how to fix it); `@Publish()`
 * methods are wrapped so their return value is published.
 */
@Injectable()
export class MessagingExplorer implements OnModuleInit {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly registry: ConsumerRegistry,
    private readonly topology: TopologyService,
    private readonly publisher: MessagePublisher,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly transactions: TransactionContext,
  ) {}

  onModuleInit(): void {
    const consumers: ConsumerDefinition[] = [];
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance) as object | null;
      if (!prototype) continue;
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = instance[methodName];
        if (typeof method !== 'function') continue;
        const consume = Reflect.getMetadata(CONSUME_METADATA, method) as ConsumeOptions | undefined;
        const publish = Reflect.getMetadata(PUBLISH_METADATA, method) as PublishDecoratorOptions | undefined;
        if ((consume || publish) && !this.isStatic(wrapper, methodName)) continue;
        if (consume)
          consumers.push(...this.withOrdering(this.define(instance, prototype, methodName, consume)));
        if (publish) this.wrapPublisher(instance, methodName, publish);
      }
    }
    const queues = new Map<string, string>();
    for (const consumer of consumers) {
      const other = queues.get(consumer.queue);
      if (other) {
        throw new ConfigurationError(
          `@Consume: ${consumer.name} and ${other} both use queue '${consumer.queue}'; give each consumer its own queue`,
        );
      }
      queues.set(consumer.queue, consumer.name);
    }
    this.registry.register(this.options.consumersEnabled ? consumers : [], consumers);
  }

  /** The consumers that run a definition: itself, its single-active-consumer queue, or one per partition. */
  private withOrdering(definition: ConsumerDefinition): ConsumerDefinition[] {
    return planConsumerOrdering(
      definition,
      (queue, queueType, extra) => this.topology.queueArguments(queue, queueType, extra),
      (message) => this.logger.warn(message),
    );
  }

  private isStatic(wrapper: InstanceWrapper, methodName: string): boolean {
    if (wrapper.isDependencyTreeStatic() && !wrapper.isTransient) return true;
    this.logger.warn(
      `${wrapper.name as string}.${methodName} is request-scoped or transient; messaging decorators there are skipped`,
    );
    return false;
  }

  private define(
    instance: object,
    prototype: object,
    methodName: string,
    options: ConsumeOptions,
  ): ConsumerDefinition {
    const name = `${instance.constructor.name}.${methodName}`;
    if (!options || typeof options.queue !== 'string') {
      throw new ConfigurationError(
        `@Consume on ${name}: 'queue' is required, e.g. @Consume({ queue: 'billing.order-placed' })`,
      );
    }
    assertName(`${name} queue`, options.queue);
    const paramTypes = (Reflect.getMetadata('design:paramtypes', prototype, methodName) ?? []) as unknown[];
    const candidate = options.message ?? paramTypes[0];
    const messageClass = PRIMITIVES.has(candidate) ? undefined : (candidate as Type<object>);
    const messageDefinition = getMessageDefinition(messageClass);
    const messageTypes = options.messageTypes ?? (messageDefinition ? [messageDefinition.type] : []);
    const bindings = [...new Set([...messageTypes, ...(options.routingKeys ?? [])])];
    if (bindings.length === 0) {
      throw new ConfigurationError(
        `@Consume on ${name}: nothing to bind; type the first parameter with a @MessageType() class or set messageTypes / routingKeys`,
      );
    }
    const queueType = options.queueType ?? this.options.defaultQueueType;
    assertQueueType(`${name} queueType`, queueType);
    const concurrency = options.concurrency ?? this.options.defaultConcurrency;
    assertInteger(`${name} concurrency`, concurrency, 1, 10_000);
    const prefetch = options.prefetch ?? this.options.defaultPrefetch ?? concurrency;
    assertInteger(`${name} prefetch`, prefetch, 1, 65_535);
    const acceptedMajorVersions =
      options.acceptedMajorVersions ?? (messageDefinition ? [messageDefinition.major] : []);
    return {
      name,
      queue: options.queue,
      deadLetterQueue: `${options.queue}.dlq`,
      exchange: this.options.exchange,
      bindings,
      queueType,
      queueArguments: this.topology.queueArguments(options.queue, queueType, options.queueArguments),
      concurrency,
      prefetch,
      messageClass,
      messageTypes,
      acceptedMajorVersions,
      instance,
      methodName,
      options,
    };
  }

  private wrapPublisher(
    instance: Record<string, unknown>,
    methodName: string,
    options: PublishDecoratorOptions,
  ): void {
    const original = instance[methodName] as (...args: unknown[]) => unknown;
    const publisher = this.publisher;
    const transactions = this.transactions;
    // With nestjs-cls, the method and the outbox rows of what it returns share one transaction: the caller's,
    // or one opened here, which a @Transactional() on the method joins instead of committing before the publish.
    const wrapped = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      return transactions.runInCurrentOrNewTransaction(async () => {
        const result = await original.apply(this, args);
        const messages = Array.isArray(result)
          ? result
          : result === undefined || result === null
            ? []
            : [result];
        await publisher.publishAll(messages as object[], options);
        return result;
      });
    };
    // NOTE: Nest reads metadata from the method object, so the wrapper carries the original's metadata.
    for (const key of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(key, Reflect.getMetadata(key, original), wrapped);
    }
    instance[methodName] = wrapped;
  }
}
