import { Module, type DynamicModule, type FactoryProvider, type ModuleMetadata } from '@nestjs/common';
import { Registry } from 'prom-client';
import { ReliableMessagingModule } from '../reliable-messaging.module';
import type { ReliableMessagingModuleOptions } from '../options/reliable-messaging.options';
import { InMemoryBroker } from './in-memory-broker/in-memory-broker';
import { IN_MEMORY_CONNECTIONS, InMemoryConnections } from './in-memory-connections';
import { MessagingHarness } from './messaging-harness';

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
 * Without a `dataSource` the inbox is kept in memory, and `dedup` is on by default as it would be with one.
 * With the app's `dataSource` (`forRootAsync`), the inbox and the outbox are its tables, in real transactions:
 * a message published in a transaction reaches the broker only after the commit.
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
  return {
    module: ReliableMessagingTestingModule,
    global: true,
    imports: [messaging],
    providers: [
      { provide: IN_MEMORY_CONNECTIONS, useValue: connections },
      { provide: InMemoryBroker, useValue: connections.broker },
      MessagingHarness,
    ],
    exports: [MessagingHarness, InMemoryBroker],
  };
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
