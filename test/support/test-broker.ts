import { randomBytes } from 'node:crypto';
import * as amqp from 'amqplib';
import { waitFor } from './wait-for';

/** The broker end-to-end specs use when `AMQP_URL` is not set. */
export const DEFAULT_AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';

/** Where {@link TestBroker.publishRaw} sends a message: straight to a queue, or to an exchange. */
export type RawTarget = { queue: string } | { exchange: string; routingKey?: string };

/**
 * A spec's own view of RabbitMQ: a unique name prefix, raw publishing and reading that bypass the module under
 * test, and cleanup of what the spec declared. Connect in `beforeAll`; `deleteByPrefix()` and `close()` in
 * `afterAll`.
 */
export class TestBroker {
  private connection?: amqp.ChannelModel;
  private channel?: amqp.ConfirmChannel;
  private readonly names = new Set<string>();

  private constructor(
    /** The connection URL, `AMQP_URL` or {@link DEFAULT_AMQP_URL} unless given. */
    readonly url: string,
    /** Starts every queue and exchange name of this spec: `rm-e2e-<random hex>`. */
    readonly prefix: string,
  ) {}

  /** Opens a connection to `url` (default: `AMQP_URL`, else {@link DEFAULT_AMQP_URL}). */
  static async connect(url: string = process.env.AMQP_URL ?? DEFAULT_AMQP_URL): Promise<TestBroker> {
    const broker = new TestBroker(url, `rm-e2e-${randomBytes(4).toString('hex')}`);
    await broker.openChannel();
    return broker;
  }

  /** A queue or exchange name under this spec's prefix, remembered for {@link deleteByPrefix}. */
  name(suffix: string): string {
    const name = `${this.prefix}.${suffix}`;
    this.names.add(name);
    return name;
  }

  /** Remembers queues or exchanges declared elsewhere (by the app under test, say) for {@link deleteByPrefix}. */
  track(...names: string[]): void {
    for (const name of names) this.names.add(name);
  }

  /**
   * A confirm channel on this helper's connection, for declarations the helpers do not cover. Reopened after the
   * broker closed it (a failed passive check, or the connection closed from the broker's side).
   */
  async openChannel(): Promise<amqp.ConfirmChannel> {
    if (this.channel) return this.channel;
    if (!this.connection) {
      const connection = await amqp.connect(this.url, { clientProperties: { connection_name: this.prefix } });
      // NOTE: amqplib emits 'error' when the broker closes the connection (close_all_connections, a restart);
      // unhandled, that event would crash the Jest process instead of failing one test.
      connection.on('error', () => undefined);
      connection.on('close', () => {
        this.connection = undefined;
        this.channel = undefined;
      });
      this.connection = connection;
    }
    const channel = await this.connection.createConfirmChannel();
    channel.on('error', () => undefined);
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    this.channel = channel;
    return channel;
  }

  /** Publishes `body` as it is, bypassing the module under test, and waits for the broker's confirm. */
  async publishRaw(
    target: RawTarget,
    body: Buffer | string,
    properties: amqp.Options.Publish = {},
  ): Promise<void> {
    const channel = await this.openChannel();
    const content = typeof body === 'string' ? Buffer.from(body) : body;
    if ('queue' in target) {
      this.track(target.queue);
      channel.sendToQueue(target.queue, content, properties);
    } else {
      this.track(target.exchange);
      channel.publish(target.exchange, target.routingKey ?? '', content, properties);
    }
    await channel.waitForConfirms();
  }

  /** Takes (and acknowledges) every message now in `queue`, oldest first. */
  async getAll(queue: string): Promise<amqp.GetMessage[]> {
    const channel = await this.openChannel();
    const messages: amqp.GetMessage[] = [];
    for (;;) {
      const message = await channel.get(queue, { noAck: true });
      if (message === false) return messages;
      messages.push(message);
    }
  }

  /** Takes messages from `queue` until at least `count` arrived, or fails after `timeoutMs` (default 10 s). */
  async waitForMessages(queue: string, count: number, timeoutMs = 10_000): Promise<amqp.GetMessage[]> {
    const messages: amqp.GetMessage[] = [];
    await waitFor(
      () => `${count} message(s) on queue ${queue} (got ${messages.length})`,
      async () => {
        messages.push(...(await this.getAll(queue)));
        return messages.length >= count;
      },
      { timeoutMs, intervalMs: 100 },
    );
    return messages;
  }

  /** The number of ready messages in `queue` (not counting unacknowledged ones). */
  async queueDepth(queue: string): Promise<number> {
    return (await this.checkQueue(queue)).messageCount;
  }

  /**
   * The queue's ready messages and consumers, over AMQP (`queue.declare` passive): milliseconds, where
   * `queueCounts()`'s `rabbitmqctl` takes a second or more. A quorum queue reports consumers with a lag.
   */
  async checkQueue(queue: string): Promise<{ messageCount: number; consumerCount: number }> {
    const channel = await this.openChannel();
    return channel.checkQueue(queue);
  }

  /**
   * Deletes every queue and exchange this spec named or tracked (`name()`, `track()`; MessagingTestApp tracks
   * what its app declares). Over AMQP, in milliseconds: listing the broker's names with `rabbitmqctl` took one to
   * two seconds a call. Anything else a spec left under the `rm-e2e-` prefix goes when the run ends
   * (test/support/sweep-broker.mjs, Jest's global setup and teardown).
   */
  async deleteByPrefix(): Promise<void> {
    // NOTE: RabbitMQ answers delete-ok for a queue or exchange that does not exist, so a tracked name can be
    // deleted both as a queue and as an exchange without knowing which it is.
    for (const name of this.names) await (await this.openChannel()).deleteQueue(name);
    for (const name of this.names) await (await this.openChannel()).deleteExchange(name);
    this.names.clear();
  }

  /** Closes this helper's connection. */
  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    this.channel = undefined;
    await connection?.close().catch(() => undefined);
  }
}
