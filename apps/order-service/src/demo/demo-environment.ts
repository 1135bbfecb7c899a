import { DEMO_RUN_ID } from './demo-namespace';
import type { ChannelModel } from 'amqplib';
import {
  delayLevelNames,
  deliverExchangeName,
  keyExchangeName,
  unbucketedExchangeName,
} from 'nestjs-reliable-messaging/operations';
import { Client } from 'pg';
import { messagingNames, type MessagingNames } from '../config/messaging-names';
import { HISTORY_PARTITIONS } from '../history/order-history.consumer';

/**
 * What one demo run has to itself: a fresh database on the configured PostgreSQL server and a messaging
 * namespace (`demo-<random>`: its own exchanges and queues on the configured broker). Repeated or parallel
 * runs never see each other's orders or messages, and a run leaves nothing behind unless asked to.
 */
export class DemoEnvironment {
  private constructor(
    readonly namespace: string,
    readonly names: MessagingNames,
    readonly databaseName: string,
    readonly databaseUrl: string,
    private readonly serverUrl: string,
  ) {}

  /** Creates the database on the server `serverUrl` points at. */
  static async create(serverUrl: string): Promise<DemoEnvironment> {
    const id = DEMO_RUN_ID;
    const namespace = `demo-${id}`;
    const databaseName = `order_demo_${id}`;
    try {
      await asAdmin(serverUrl, (client) => client.query(`CREATE DATABASE "${databaseName}"`));
    } catch (error) {
      throw new Error(
        `could not create the demo's database on ${new URL(serverUrl).host} ` +
          `(${error instanceof Error ? error.message : String(error)}); is PostgreSQL running there? (DATABASE_URL)`,
        { cause: error },
      );
    }
    const databaseUrl = new URL(serverUrl);
    databaseUrl.pathname = `/${databaseName}`;
    return new DemoEnvironment(
      namespace,
      messagingNames(namespace),
      databaseName,
      databaseUrl.toString(),
      serverUrl,
    );
  }

  /** The queues the app's consumers read: the history's partitions in place of its queue. */
  get consumedQueues(): string[] {
    const { history, ...unpartitioned } = this.names.queues;
    return [
      ...Object.values(unpartitioned),
      ...Array.from(
        { length: HISTORY_PARTITIONS },
        (_, index) => `${history}.p${String(index).padStart(3, '0')}`,
      ),
    ];
  }

  /** The dead-letter queues of the app's consumers. */
  get deadLetterQueues(): string[] {
    return this.consumedQueues.map((queue) => `${queue}.dlq`);
  }

  /**
   * Deletes the run's queues and exchanges: the consumers' queues and dead-letter queues, the module's retry
   * delay levels, and the exchanges. Run after the app has stopped, or it declares them again.
   */
  async removeBrokerObjects(model: ChannelModel): Promise<void> {
    const { exchange, deadLetterExchange, queues } = this.names;
    const delayLevels = delayLevelNames(exchange);
    const channel = await model.createChannel();
    channel.on('error', () => undefined);
    try {
      for (const queue of [...this.consumedQueues, ...this.deadLetterQueues, ...delayLevels]) {
        await channel.deleteQueue(queue);
      }
      // The history's key exchanges, and the one earlier versions named after its queue.
      for (const name of [
        keyExchangeName(queues.history, HISTORY_PARTITIONS),
        unbucketedExchangeName(queues.history),
        queues.history,
        exchange,
        deadLetterExchange,
        deliverExchangeName(exchange),
        ...delayLevels,
      ]) {
        await channel.deleteExchange(name);
      }
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  /** Drops the run's database, closing any connection still open to it. */
  async dropDatabase(): Promise<void> {
    await asAdmin(this.serverUrl, (client) =>
      client.query(`DROP DATABASE IF EXISTS "${this.databaseName}" WITH (FORCE)`),
    );
  }
}

async function asAdmin(serverUrl: string, work: (client: Client) => Promise<unknown>): Promise<void> {
  const url = new URL(serverUrl);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}
