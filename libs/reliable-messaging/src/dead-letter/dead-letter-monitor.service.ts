import { Inject, Injectable } from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { ProbeChannel } from '../amqp/probe-channel';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { moduleOwnedQueues } from '../scheduling/broker-delay';
import { SharedReading } from '../util/shared-reading';
import { describeQueueError } from './dead-letter-queue';
import { readDeadLetter } from './dead-letter-record';

/** Depth and age of one consumer's dead-letter queue. */
export interface DeadLetterQueueStats {
  /** The consumer queue. */
  queue: string;
  deadLetterQueue: string;
  /** Ready messages in the dead-letter queue (messages a tool is reading at that moment are not counted). */
  depth: number;
  /** Seconds since the oldest dead letter was dead-lettered; null when the queue is empty. */
  oldestAgeSeconds: number | null;
}

/** How long one reading is shared between callers (a scrape, a health check and a CLI may ask together). */
const SHARE_FOR_MS = 1000;

/**
 * Depth and oldest-message age of every consumer's dead-letter queue, for health, metrics and the tools. The
 * depth comes from a passive declare; the age from the head of the queue, which is its oldest message: it is
 * taken with `basic.get` and returned at once with `basic.nack(requeue)`, so nothing moves (its dead-lettering
 * time is in its headers). That needs neither the management plugin nor a database, and reads the queue as it
 * is rather than a copy that could drift. Runs on a channel of its own, so a missing queue never disturbs a
 * consumer or the publisher.
 */
@Injectable()
export class DeadLetterMonitor {
  private readonly probe = new ProbeChannel();
  private readonly shared = new SharedReading<DeadLetterQueueStats[]>(SHARE_FOR_MS);

  constructor(
    private readonly connection: ConsumerConnection,
    private readonly registry: ConsumerRegistry,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /**
   * Every consumer's dead-letter queue, and those of the module's own queues (moduleOwnedQueues); concurrent and
   * recent callers share one reading.
   */
  snapshot(): Promise<DeadLetterQueueStats[]> {
    return this.shared.get(() =>
      this.read([
        ...this.registry.discoveredConsumers.map((consumer) => consumer.queue),
        ...moduleOwnedQueues(this.options),
      ]),
    );
  }

  /** The given consumer queues' dead-letter queues, read now. */
  async read(queues: readonly string[]): Promise<DeadLetterQueueStats[]> {
    const model = this.connection.model;
    if (!model) throw new Error('not connected to the broker; reconnecting');
    const stats: DeadLetterQueueStats[] = [];
    for (const queue of queues) stats.push(await this.readOne(model, queue));
    return stats;
  }

  private async readOne(model: ChannelModel, queue: string): Promise<DeadLetterQueueStats> {
    const deadLetterQueue = `${queue}.dlq`;
    const channel = await this.probe.on(model);
    try {
      const { messageCount } = await channel.checkQueue(deadLetterQueue);
      let oldestAgeSeconds: number | null = null;
      if (messageCount > 0) {
        const head = await channel.get(deadLetterQueue, { noAck: false });
        if (head !== false) {
          channel.nack(head, false, true);
          const at =
            readDeadLetter(head, deadLetterQueue).deadLetteredAt ?? timestampOf(head.properties.timestamp);
          if (at) oldestAgeSeconds = Math.max(0, Math.round((Date.now() - at.getTime()) / 1000));
        }
      }
      return { queue, deadLetterQueue, depth: messageCount, oldestAgeSeconds };
    } catch (error) {
      this.probe.discard(channel);
      throw new Error(`cannot read dead-letter queue '${deadLetterQueue}': ${describeQueueError(error)}`, {
        cause: error,
      });
    }
  }
}

function timestampOf(seconds: unknown): Date | undefined {
  return typeof seconds === 'number' && Number.isFinite(seconds) ? new Date(seconds * 1000) : undefined;
}
