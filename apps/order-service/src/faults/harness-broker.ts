import * as amqp from 'amqplib';

/**
 * The harness's own broker connection, opened again on first use after a fault closed it (the broker stopped,
 * say), so that reading dead letters and publishing the poison message work in every cycle. Given a cluster's
 * URLs, it connects to the first node that answers.
 */
export class HarnessBroker {
  private model?: amqp.ChannelModel;
  private opening?: Promise<amqp.ChannelModel>;
  private readonly urls: readonly string[];

  constructor(urls: string | readonly string[]) {
    this.urls = typeof urls === 'string' ? [urls] : urls;
  }

  /** An open connection: the current one, or a new one. */
  async connection(): Promise<amqp.ChannelModel> {
    if (this.model) return this.model;
    this.opening ??= this.connectToAny()
      .then((model) => {
        model.on('error', () => undefined);
        model.on('close', () => {
          if (this.model === model) this.model = undefined;
        });
        this.model = model;
        return model;
      })
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async connectToAny(): Promise<amqp.ChannelModel> {
    let failure: unknown;
    for (const url of this.urls) {
      try {
        return await amqp.connect(url, { clientProperties: { connection_name: 'fault-matrix' } });
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }

  /** A confirm channel on the connection; close it when done. */
  async confirmChannel(): Promise<amqp.ConfirmChannel> {
    const channel = await (await this.connection()).createConfirmChannel();
    channel.on('error', () => undefined);
    return channel;
  }

  /** Removes every message of `queues` (what a cycle read is done with). */
  async purge(queues: readonly string[]): Promise<void> {
    const channel = await (await this.connection()).createChannel();
    channel.on('error', () => undefined);
    try {
      for (const queue of queues) await channel.purgeQueue(queue);
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.model?.close().catch(() => undefined);
    this.model = undefined;
  }
}
