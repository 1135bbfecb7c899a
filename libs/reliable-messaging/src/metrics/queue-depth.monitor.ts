import { Injectable } from '@nestjs/common';
import type { Channel, ChannelModel } from 'amqplib';
import { AmqpConnection } from '../amqp/amqp-connection.service';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { SharedReading } from '../util/shared-reading';

/** What the broker reports about one consumer's queue. */
export interface QueueDepth {
  queue: string;
  /** Ready messages in the queue; undefined when the queue does not exist. */
  ready?: number;
  /** Consumers subscribed to the queue, from every process. */
  consumers?: number;
}

/** How long one reading is shared between callers (a scrape reads several gauges, health reads too). */
const SHARE_FOR_MS = 1000;

/**
 * Reads the depth and consumer count of every consumer's queue with passive declares
 * (`queue.declare` with passive), on a channel of its own so that a missing queue, which makes the broker close
 * the channel, never disturbs a consumer or the publisher. Works without the management plugin.
 */
@Injectable()
export class QueueDepthMonitor {
  private channel?: Channel;
  private channelModel?: ChannelModel;
  private readonly shared = new SharedReading<QueueDepth[]>(SHARE_FOR_MS);

  constructor(
    private readonly connection: AmqpConnection,
    private readonly registry: ConsumerRegistry,
  ) {}

  /** The current depths; concurrent and recent callers share one reading. */
  snapshot(): Promise<QueueDepth[]> {
    return this.shared.get(() => this.read());
  }

  private async read(): Promise<QueueDepth[]> {
    const model = this.connection.model;
    if (!model) throw new Error('not connected to the broker');
    const depths: QueueDepth[] = [];
    for (const consumer of this.registry.consumers) {
      const queue = await this.check(model, consumer.queue);
      depths.push({ queue: consumer.queue, ready: queue?.messageCount, consumers: queue?.consumerCount });
    }
    return depths;
  }

  private async check(
    model: ChannelModel,
    queue: string,
  ): Promise<{ messageCount: number; consumerCount: number } | undefined> {
    const channel = await this.open(model);
    try {
      return await channel.checkQueue(queue);
    } catch (error) {
      if (this.channel === channel) this.channel = undefined;
      if (/NOT_FOUND/.test(error instanceof Error ? error.message : String(error))) return undefined;
      throw error;
    }
  }

  private async open(model: ChannelModel): Promise<Channel> {
    if (this.channel && this.channelModel === model) return this.channel;
    const channel = await model.createChannel();
    // NOTE: a passive declare of a missing queue closes the channel with 404; unhandled, amqplib would rethrow
    // that 'error' event on the connection.
    channel.on('error', () => undefined);
    channel.once('close', () => {
      if (this.channel === channel) this.channel = undefined;
    });
    this.channel = channel;
    this.channelModel = model;
    return channel;
  }
}
