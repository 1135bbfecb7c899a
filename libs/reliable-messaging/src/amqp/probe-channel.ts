import type { Channel, ChannelModel } from 'amqplib';

/**
 * A channel of its own for reading queues (passive declares, peeks), reused while its connection lives and
 * opened again after the broker closed it, so a missing queue never disturbs a consumer or the publisher.
 */
export class ProbeChannel {
  private channel?: Channel;
  private model?: ChannelModel;

  async on(model: ChannelModel): Promise<Channel> {
    if (this.channel && this.model === model) return this.channel;
    const channel = await model.createChannel();
    // NOTE: a passive declare of a missing queue closes the channel with 404; unhandled, amqplib would rethrow
    // that 'error' event on the connection.
    channel.on('error', () => undefined);
    channel.once('close', () => this.discard(channel));
    this.channel = channel;
    this.model = model;
    return channel;
  }

  /** Forgets a channel a failed operation may have closed, so the next read opens a fresh one. */
  discard(channel: Channel): void {
    if (this.channel === channel) this.channel = undefined;
  }
}
