import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import {
  Module,
  type INestApplicationContext,
  type LoggerService,
  type ModuleMetadata,
  type Provider,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  MessagePublisher,
  ReliableMessagingModule,
  type ReliableMessagingModuleOptions,
} from 'nestjs-reliable-messaging';
import {
  ConsumerRegistry,
  delayLevelNames,
  deliverExchangeName,
  republishQueueName,
  unbucketedExchangeName,
} from 'nestjs-reliable-messaging/operations';
import type { TestBroker } from './test-broker';

const run = promisify(execFile);

/** One line the app logged, with its level and Nest logger context. */
export interface LogLine {
  level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  context: string;
  message: string;
}

/** A Nest logger that keeps every line in memory, so a spec can assert on what the module reported. */
export class CapturingLogger implements LoggerService {
  readonly lines: LogLine[] = [];

  log(message: unknown, ...rest: unknown[]): void {
    this.push('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.push('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.push('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.push('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.push('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.push('fatal', message, rest);
  }

  /** Lines at `level` whose message matches `pattern`. */
  find(level: LogLine['level'], pattern: RegExp): LogLine[] {
    return this.lines.filter((line) => line.level === level && pattern.test(line.message));
  }

  /** Every line as `level [context] message`, for failure messages. */
  dump(): string {
    return this.lines.map((line) => `${line.level} [${line.context}] ${line.message}`).join('\n');
  }

  private push(level: LogLine['level'], message: unknown, rest: unknown[]): void {
    const context = typeof rest.at(-1) === 'string' ? (rest.at(-1) as string) : '';
    this.lines.push({
      level,
      context,
      message: message instanceof Error ? message.message : String(message),
    });
  }
}

/** How a spec boots the module: its providers and any module option besides the unique names. */
export interface MessagingAppSetup {
  /** Providers with `@Consume()` / `@Publish()` methods, and whatever they inject. */
  providers?: Provider[];
  /** Modules beside ReliableMessagingModule (`ReliableMessagingHealthModule`, `ReliableMessagingAdminModule`, say). */
  imports?: ModuleMetadata['imports'];
  /** Module options; `urls`, `exchange` and `connectionName` default to the broker's URL and unique names. */
  options?: Partial<ReliableMessagingModuleOptions>;
}

/**
 * A Nest application context with `ReliableMessagingModule.forRoot()` on the real broker, with names unique to
 * the spec: the exchange is `<prefix>.events` and the connection is named after the prefix, so a spec can close
 * its own connections without touching other specs'. Every queue and exchange the app declares is tracked for
 * `broker.deleteByPrefix()`.
 */
export class MessagingTestApp {
  private constructor(
    readonly app: INestApplicationContext,
    readonly logger: CapturingLogger,
    /** The module's `connectionName`; the broker shows the app's two connections as `<name>:consume` and `<name>:publish`. */
    readonly connectionName: string,
  ) {}

  /** Boots the app and waits until it is connected, its topology declared and its consumers subscribed. */
  static async start(broker: TestBroker, setup: MessagingAppSetup = {}): Promise<MessagingTestApp> {
    const logger = new CapturingLogger();
    const { app, connectionName } = await MessagingTestApp.create(broker, setup, logger);
    return new MessagingTestApp(app, logger, connectionName);
  }

  /** Boots the app expecting startup to fail; resolves with the error and what was logged. */
  static async startFailing(
    broker: TestBroker,
    setup: MessagingAppSetup = {},
  ): Promise<{ error: unknown; logger: CapturingLogger }> {
    const logger = new CapturingLogger();
    try {
      const { app } = await MessagingTestApp.create(broker, setup, logger);
      await app.close();
    } catch (error) {
      return { error, logger };
    }
    throw new Error(`the app started, but it was expected to fail:\n${logger.dump()}`);
  }

  private static async create(
    broker: TestBroker,
    setup: MessagingAppSetup,
    logger: CapturingLogger,
  ): Promise<{ app: INestApplicationContext; connectionName: string }> {
    const options: ReliableMessagingModuleOptions = {
      urls: broker.url,
      exchange: broker.name('events'),
      connectionName: `${broker.prefix}.app-${randomBytes(2).toString('hex')}`,
      ...setup.options,
    };
    const exchange = options.exchange as string;
    broker.track(
      exchange,
      options.deadLetterExchange ?? `${exchange}.dead-letter`,
      ...delayLevelNames(exchange),
      deliverExchangeName(exchange),
      republishQueueName(exchange),
      `${republishQueueName(exchange)}.dlq`,
    );

    @Module({
      imports: [ReliableMessagingModule.forRoot(options), ...(setup.imports ?? [])],
      providers: setup.providers ?? [],
    })
    class SpecAppModule {}

    const app = await NestFactory.createApplicationContext(SpecAppModule, { logger, abortOnError: false });
    for (const consumer of app.get(ConsumerRegistry).consumers) {
      broker.track(consumer.queue, consumer.deadLetterQueue);
      if (consumer.ordering.mode === 'key') {
        broker.track(consumer.ordering.keyExchange, unbucketedExchangeName(consumer.ordering.baseQueue));
      }
    }
    return { app, connectionName: options.connectionName as string };
  }

  /** The module's publisher. */
  get publisher(): MessagePublisher {
    return this.app.get(MessagePublisher);
  }

  /** Resolves a provider of the app (a handler fixture, say). */
  get<T>(token: abstract new (...args: never[]) => T): T {
    return this.app.get(token);
  }

  /** Closes the app through Nest's shutdown hooks (consumers drain, the connection closes). */
  async close(): Promise<void> {
    await this.app.close();
  }
}

/** A queue name unique to this run, under the `rm-e2e-` prefix that specs clean up after themselves. */
export function uniqueQueue(scenario: string): string {
  return `rm-e2e-${randomBytes(4).toString('hex')}.${scenario}`;
}

/** Ready and unacknowledged message counts and consumers of a queue, as the broker reports them. */
export interface QueueCounts {
  ready: number;
  unacked: number;
  consumers: number;
}

/** Reads a queue's counts with `rabbitmqctl` (the broker runs on this machine; no management plugin). */
export async function queueCounts(queue: string): Promise<QueueCounts> {
  const { stdout } = await run('rabbitmqctl', [
    '-q',
    'list_queues',
    'name',
    'messages_ready',
    'messages_unacknowledged',
    'consumers',
    '--no-table-headers',
  ]);
  const line = stdout.split('\n').find((row) => row.split('\t')[0] === queue);
  if (!line) throw new Error(`queue ${queue} does not exist`);
  const [, ready, unacked, consumers] = line.split('\t').map(Number);
  return { ready, unacked, consumers };
}

/** Runs `rabbitmqctl` with `args` against a broker node and resolves with what it printed. */
export type RabbitmqCtl = (...args: string[]) => Promise<string>;

const localRabbitmqCtl: RabbitmqCtl = async (...args) => (await run('rabbitmqctl', ['-q', ...args])).stdout;

/**
 * Makes the broker close every connection whose client-given name starts with `namePrefix` (given an app's
 * `connectionName`, both its consumer and its publisher connection; the way
 * `rabbitmqctl close_all_connections` closes them all: `connection.close` with CONNECTION_FORCED), leaving other
 * specs' connections alone. `ctl` reaches the broker: the machine's own, unless another node is named. Resolves
 * with how many it closed.
 */
export async function closeConnectionsNamed(
  namePrefix: string,
  ctl: RabbitmqCtl = localRabbitmqCtl,
): Promise<number> {
  const listed = await ctl('list_connections', 'pid', 'client_properties', '--no-table-headers');
  const pids = listed
    .split('\n')
    .filter((line) => line.includes(`{"connection_name","${namePrefix}`))
    .map((line) => line.split('\t')[0]);
  // Closed together, as a broker restart would close them, rather than one after the other over seconds.
  await Promise.all(pids.map((pid) => ctl('close_connection', pid, 'closed by an end-to-end spec')));
  return pids.length;
}
