import {
  Inject,
  Module,
  type DynamicModule,
  type INestApplicationContext,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  ConfigurationError,
  ReliableMessagingModule,
  type ReliableMessagingModuleOptions,
} from 'nestjs-reliable-messaging';
import { errorMessage } from 'nestjs-reliable-messaging/operations';
import type { DataSource } from 'typeorm';
import { DECLARED_DEAD_LETTER_QUEUES } from '../dead-letter/declared-queues';
import { ReliableMessagingAdminModule } from '../reliable-messaging-admin.module';

/**
 * The environment the `dlq` bin reads. Only `AMQP_URL` is required; give the names the app uses when it
 * changed the module's defaults, so the tool declares and reads the same broker objects.
 */
export interface ToolEnvironment {
  /** The broker, `amqp://user:password@host:5672/vhost`; several nodes comma-separated. Required. */
  AMQP_URL?: string;
  /**
   * The app's consumer queues, comma-separated (`orders,billing`): the tool reads, replays and purges only their
   * dead-letter queues (`<queue>.dlq`), and refuses any other queue. Default: none, so every command is refused.
   */
  RM_QUEUES?: string;
  /** The app's PostgreSQL (`postgres://...`): needed for parked outbox rows and the audit table. Default: none (the audit trail goes to a file). */
  DATABASE_URL?: string;
  /** The app's `exchange` option. Default: `events`. */
  RM_EXCHANGE?: string;
  /** The app's `deadLetterExchange` option. Default: `<RM_EXCHANGE>.dead-letter`. */
  RM_DEAD_LETTER_EXCHANGE?: string;
  /** The broker connections' name, shown as `<name>:consume` and `<name>:publish`. Default: `dlq`. */
  RM_CONNECTION_NAME?: string;
  /** The audit file when there is no `DATABASE_URL`. Default: `dead-letter-audit.jsonl` in the working directory. */
  RM_DEAD_LETTER_AUDIT_FILE?: string;
}

const TOOL_DATA_SOURCE = Symbol('TOOL_DATA_SOURCE');

/**
 * The messaging options of a tool process from its environment: it consumes nothing and relays nothing, so it
 * only reads, replays and moves rows. Throws a ConfigurationError naming the variable to set.
 */
export function toolOptionsFromEnv(env: ToolEnvironment): ReliableMessagingModuleOptions {
  const urls = (env.AMQP_URL ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  if (urls.length === 0) {
    throw new ConfigurationError(
      'dlq: set AMQP_URL to the broker the app uses, e.g. AMQP_URL=amqp://user:password@rabbitmq:5672',
    );
  }
  return {
    urls,
    connectionName: env.RM_CONNECTION_NAME || 'dlq',
    ...(env.RM_EXCHANGE ? { exchange: env.RM_EXCHANGE } : {}),
    ...(env.RM_DEAD_LETTER_EXCHANGE ? { deadLetterExchange: env.RM_DEAD_LETTER_EXCHANGE } : {}),
    ...(env.RM_DEAD_LETTER_AUDIT_FILE ? { deadLetterAuditFile: env.RM_DEAD_LETTER_AUDIT_FILE } : {}),
    consumersEnabled: false,
    outbox: { relay: false },
  };
}

/** Closes the tool's DataSource once the module stopped using it (the root module's hooks run last). */
class ToolDataSourceCloser implements OnApplicationShutdown {
  constructor(@Inject(TOOL_DATA_SOURCE) private readonly dataSource: DataSource | undefined) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource?.isInitialized) await this.dataSource.destroy();
  }
}

@Module({})
class DlqToolModule {
  static register(
    options: ReliableMessagingModuleOptions,
    dataSource: DataSource | undefined,
    queues: readonly string[],
  ): DynamicModule {
    return {
      module: DlqToolModule,
      imports: [
        ReliableMessagingModule.forRoot({ ...options, dataSource }),
        {
          module: ReliableMessagingAdminModule,
          providers: [{ provide: DECLARED_DEAD_LETTER_QUEUES, useValue: queues }],
        },
      ],
      providers: [{ provide: TOOL_DATA_SOURCE, useValue: dataSource }, ToolDataSourceCloser],
    };
  }
}

/**
 * Boots the app context the `dlq` bin runs on, from the environment alone: ReliableMessagingModule with no
 * consumers and no relay, and ReliableMessagingAdminModule. With `DATABASE_URL` it opens a PostgreSQL DataSource
 * (TypeORM is loaded only then) and never runs migrations: the app owns its schema. Without it, parked outbox
 * rows are out of reach and the audit trail goes to a file.
 */
export async function createToolContext(
  env: ToolEnvironment = process.env,
): Promise<INestApplicationContext> {
  const options = toolOptionsFromEnv(env);
  const dataSource = env.DATABASE_URL ? await openDataSource(env.DATABASE_URL) : undefined;
  try {
    return await NestFactory.createApplicationContext(
      DlqToolModule.register(options, dataSource, toolQueuesFromEnv(env)),
      {
        logger: ['error', 'warn'],
        abortOnError: false,
      },
    );
  } catch (error) {
    if (dataSource?.isInitialized) await dataSource.destroy();
    throw error;
  }
}

/** The app's consumer queues from `RM_QUEUES`. */
export function toolQueuesFromEnv(env: ToolEnvironment): string[] {
  return (env.RM_QUEUES ?? '')
    .split(',')
    .map((queue) => queue.trim())
    .filter((queue) => queue !== '');
}

async function openDataSource(url: string): Promise<DataSource> {
  let typeorm: typeof import('typeorm');
  try {
    typeorm = await import('typeorm');
    await import('pg');
  } catch (error) {
    throw new Error(
      `DATABASE_URL is set, which needs typeorm and pg beside the admin package: npm install typeorm pg (${errorMessage(error)})`,
      { cause: error },
    );
  }
  const dataSource = new typeorm.DataSource({ type: 'postgres', url, applicationName: 'dlq' });
  return dataSource.initialize();
}
