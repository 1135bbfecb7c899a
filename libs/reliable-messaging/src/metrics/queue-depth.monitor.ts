import { Injectable } from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { ProbeChannel } from '../amqp/probe-channel';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { SharedReading } from '../util/shared-reading';
import { QueueAgeEstimator } from './queue-age';

/** What the broker reports about one consumer's queue. */
export interface QueueDepth {
  queue: string;
  /** Ready messages in the queue; undefined when the queue does not exist. */
  ready?: number;
  /** Consumers subscribed to the queue, from every process. */
  consumers?: number;
  /**
   * Estimated age in seconds of the queue's oldest message, ready or held unacknowledged by this process; 0 when
   * none waits, undefined when the queue does not exist. How it is estimated, and how far off it can be: QueueAgeEstimator.
   */
  oldestAgeSeconds?: number;
}

/** How long one reading is shared between callers (a scrape reads several gauges, health reads too). */
const SHARE_FOR_MS = 1000;

/**
 * Reads the depth and consumer count of every consumer's queue with passive declares
 * (`queue.declare` with passive), on a channel of its own so that a missing queue, which makes the broker close
 * the channel, never disturbs a consumer or the publisher, and estimates each queue's oldest-message age from them
 * and from what its consumer saw (QueueAgeEstimator). Works without the management plugin.
 */
@Injectable()
export class QueueDepthMonitor {
  private readonly probe = new ProbeChannel();
  private readonly shared = new SharedReading<QueueDepth[]>(SHARE_FOR_MS);
  private readonly ages = new Map<string, QueueAgeEstimator>();

  constructor(
    private readonly connection: ConsumerConnection,
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
      const ready = queue?.messageCount;
      // NOTE: sampled after the reading: a delivery in between only moves the estimate towards the truth.
      let estimator = this.ages.get(consumer.queue);
      if (!estimator) this.ages.set(consumer.queue, (estimator = new QueueAgeEstimator()));
      const age = estimator.estimate(
        Date.now(),
        { ready, consumers: queue?.consumerCount },
        this.registry.ageSample(consumer.queue),
      );
      depths.push({
        queue: consumer.queue,
        ready,
        consumers: queue?.consumerCount,
        oldestAgeSeconds: queue ? age : undefined,
      });
    }
    return depths;
  }

  private async check(
    model: ChannelModel,
    queue: string,
  ): Promise<{ messageCount: number; consumerCount: number } | undefined> {
    const channel = await this.probe.on(model);
    try {
      return await channel.checkQueue(queue);
    } catch (error) {
      this.probe.discard(channel);
      if (/NOT_FOUND/.test(error instanceof Error ? error.message : String(error))) return undefined;
      throw error;
    }
  }
}
