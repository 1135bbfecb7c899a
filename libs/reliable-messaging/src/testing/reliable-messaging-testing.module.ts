import { Module, type DynamicModule, type FactoryProvider, type ModuleMetadata } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Registry } from 'prom-client';
import { ReliableMessagingModule } from '../reliable-messaging.module';
import { RESOLVED_MESSAGING_OPTIONS, SAGA_TIMEOUT_SERVICES } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { MessagePublisher } from '../publishing/message-publisher.service';
import type { SagaTimeoutServices } from '../saga/saga-timeout-services';
import { ScheduledMessages } from '../scheduling/scheduled-messages.service';
import { ScheduledWriter } from '../scheduling/scheduled-writer.service';
import type { ReliableMessagingModuleOptions } from '../options/reliable-messaging.options';
import { InMemoryBroker } from './in-memory-broker/in-memory-broker';
import { IN_MEMORY_CONNECTIONS, InMemoryConnections } from './in-memory-connections';
import { MessagingHarness } from './messaging-harness';
import { MemoryScheduledMessages } from './memory-scheduled-messages';

/** The module's options in a test: everything but where the broker is. */
export type ReliableMessagingTestingOptions = Omit<
  ReliableMessagingModuleOptions,
  'urls' | 'brokerConnector'
>;

/** `forRootAsync()`'s options: the options made from injected providers, such as the app's DataSource. */
export interface ReliableMessagingTestingAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as Nest's own factories: the injected values' types are the caller's
  useFactory: (...args: any[]) => ReliableMessagingTestingOptions | Promise<ReliableMessagingTestingOptions>;
  inject?: FactoryProvider['inject'];
}

/**
 * ReliableMessagingModule on an in-memory broker, for users' tests: import it instead of
 * `ReliableMessagingModule.forRoot()`, with the providers under test, and drive them with the MessagingHarness
 * it provides. The module runs unchanged (its topology, delay levels and dead-letter queues are declared on the
 * in-memory broker, which routes as RabbitMQ does), so a test sees the outcomes production would.
 *
 * Without a `dataSource` the inbox is kept in memory, and `dedup` is on by default as it would be with one; so
 * are saga instances, and scheduled messages (saga timeouts, `publish()` with `delayMs` or `deliverAt`) wait for
 * the harness's clock (`harness.clock.advance(ms)`). With the app's `dataSource` (`forRootAsync`), the inbox,
 * the outbox, the scheduled messages and the saga instances are its tables, in real transactions: a message
 * published in a transaction reaches the broker only after the commit.
 *
 * @example
 * const moduleRef = await Test.createTestingModule({
 *   imports: [ReliableMessagingTestingModule.forRoot()],
 *   providers: [PaymentConsumer],
 * }).compile();
 * await moduleRef.init();
 * const harness = moduleRef.get(MessagingHarness);
 */
@Module({})
export class ReliableMessagingTestingModule {
  /** The module on a new in-memory broker, with `options` as `ReliableMessagingModule.forRoot()` takes them. */
  static forRoot(options: ReliableMessagingTestingOptions = {}): DynamicModule {
    const connections = new InMemoryConnections(new InMemoryBroker());
    return withHarness(ReliableMessagingModule.forRoot(onInMemoryBroker(options, connections)), connections);
  }

  /** As `forRoot()`, with the options made by `useFactory` from injected providers. */
  static forRootAsync(options: ReliableMessagingTestingAsyncOptions): DynamicModule {
    const connections = new InMemoryConnections(new InMemoryBroker());
    const messaging = ReliableMessagingModule.forRootAsync({
      imports: options.imports,
      inject: options.inject,
      useFactory: async (...args: unknown[]) =>
        onInMemoryBroker(await options.useFactory(...args), connections),
    });
    return withHarness(messaging, connections);
  }
}

function withHarness(messaging: DynamicModule, connections: InMemoryConnections): DynamicModule {
  const scheduled = new MemoryScheduledMessages();
  return {
    module: ReliableMessagingTestingModule,
    global: true,
    imports: [onTestClock(messaging, scheduled)],
    providers: [
      { provide: IN_MEMORY_CONNECTIONS, useValue: connections },
      { provide: InMemoryBroker, useValue: connections.broker },
      { provide: MemoryScheduledMessages, useValue: scheduled },
      MessagingHarness,
    ],
    exports: [MessagingHarness, InMemoryBroker],
  };
}

/**
 * The module with its scheduled messages on the harness's clock when it has no `dataSource`: the publisher's
 * ScheduledWriter and the cancel of saga timeouts are `scheduled`'s. With a `dataSource` they stay the table's.
 */
function onTestClock(messaging: DynamicModule, scheduled: MemoryScheduledMessages): DynamicModule {
  // NOTE: Nest keeps the last provider a module lists for a token, and a dynamic module's providers come after its
  // @Module()'s: these two replace the module's own for every provider of the module that injects them.
  const providers = [
    {
      provide: ScheduledWriter,
      useFactory: async (options: ResolvedMessagingOptions, moduleRef: ModuleRef) =>
        options.dataSource ? moduleRef.create(ScheduledWriter) : scheduled,
      inject: [RESOLVED_MESSAGING_OPTIONS, ModuleRef],
    },
    {
      provide: SAGA_TIMEOUT_SERVICES,
      useFactory: (
        options: ResolvedMessagingOptions,
        publisher: MessagePublisher,
        scheduledMessages: ScheduledMessages,
      ): SagaTimeoutServices => ({
        publisher,
        scheduled: options.dataSource ? scheduledMessages : scheduled,
        now: options.dataSource ? () => Date.now() : () => scheduled.now(),
      }),
      inject: [RESOLVED_MESSAGING_OPTIONS, MessagePublisher, ScheduledMessages],
    },
  ];
  return { ...messaging, providers: [...(messaging.providers ?? []), ...providers] };
}

/** The options, on the in-memory broker, with the test's own metrics registry and, without a database, the memory inbox. */
function onInMemoryBroker(
  options: ReliableMessagingTestingOptions,
  connections: InMemoryConnections,
): ReliableMessagingModuleOptions {
  return {
    // Each app its own registry: two apps in one test process would otherwise register the same metrics twice.
    metricsRegistry: new Registry(),
    ...options,
    urls: 'amqp://in-memory',
    brokerConnector: connections.connect,
    inbox: options.dataSource ? options.inbox : { ...options.inbox, store: 'memory' },
  };
}
