import { Inject, Injectable } from '@nestjs/common';
import type { Channel, ChannelModel } from 'amqplib';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { TopologyMismatchError } from '../errors/topology-mismatch.error';
import { deadLetterQueueArguments } from '../dead-letter/dead-letter-queue';
import { LaneTopology } from '../lanes/lane-topology.service';
import { OrderingTopology } from '../ordering/ordering-topology.service';
import { DelayTopology } from '../retry/delay-topology.service';
import { withDeclarationChannel } from './declaration-channel';

/**
 * Declares what the consumers need: the events exchange (topic), the dead-letter exchange (direct, keyed by
 * source queue), and for each consumer its durable queue, its dead-letter queue and their bindings, its binding
 * to the retry deliver exchange (DelayTopology), when it orders by key its key exchange
 * (OrderingTopology), and when it has lanes their router (LaneTopology). Run at startup and after every reconnect, after the retry delay levels; a consumer whose
 * subscription the server cancelled declares its own part again. A queue that exists with other arguments fails
 * with TopologyMismatchError.
 */
@Injectable()
export class TopologyService {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly delays: DelayTopology,
    private readonly ordering: OrderingTopology,
    private readonly lanes: LaneTopology,
  ) {}

  /** Declares the exchanges and every consumer's queues on a short-lived channel. */
  async declare(model: ChannelModel, consumers: readonly ConsumerPlan[]): Promise<void> {
    await withDeclarationChannel(model, async (channel) => {
      await this.declareExchanges(channel);
      for (const consumer of consumers) await this.declareConsumer(model, channel, consumer);
    });
  }

  /** Declares one consumer's queues again, for example after the server cancelled its subscription. */
  async declareOne(model: ChannelModel, consumer: ConsumerPlan): Promise<void> {
    await withDeclarationChannel(model, async (channel) => {
      await this.declareExchanges(channel);
      await this.declareConsumer(model, channel, consumer);
    });
  }

  /** The arguments a consumer's queue is declared with. */
  queueArguments(
    queue: string,
    queueType: ConsumerPlan['queueType'],
    extra: Record<string, unknown> = {},
  ): Record<string, unknown> {
    const own: Record<string, unknown> = {
      'x-queue-type': queueType,
      'x-dead-letter-exchange': this.options.deadLetterExchange,
      'x-dead-letter-routing-key': queue,
    };
    if (queueType === 'quorum') {
      own['x-delivery-limit'] = this.options.deliveryLimitBackstop;
      // NOTE: at-least-once dead-lettering (RabbitMQ 3.10+) keeps a dead letter until the DLQ confirms it;
      // the broker requires reject-publish overflow for it.
      own['x-dead-letter-strategy'] = 'at-least-once';
      own['x-overflow'] = 'reject-publish';
    }
    return { ...extra, ...own };
  }

  private async declareExchanges(channel: Channel): Promise<void> {
    await channel.assertExchange(this.options.exchange, 'topic', { durable: true });
    await channel.assertExchange(this.options.deadLetterExchange, 'direct', { durable: true });
  }

  private async declareConsumer(
    model: ChannelModel,
    channel: Channel,
    consumer: ConsumerPlan,
  ): Promise<void> {
    await channel.assertQueue(consumer.deadLetterQueue, {
      durable: true,
      arguments: deadLetterQueueArguments(consumer.queueType),
    });
    await channel.bindQueue(consumer.deadLetterQueue, this.options.deadLetterExchange, consumer.queue);
    await channel
      .assertQueue(consumer.queue, { durable: true, arguments: consumer.queueArguments })
      .catch(async (error: unknown) => {
        throw (await this.queueTypeMismatch(model, consumer)) ?? error;
      });
    await channel.assertExchange(consumer.exchange, 'topic', { durable: true });
    for (const key of consumer.bindings) await channel.bindQueue(consumer.queue, consumer.exchange, key);
    await this.delays.bindConsumer(channel, consumer);
    await this.ordering.declare(model, channel, consumer);
    await this.lanes.declare(model, channel, consumer);
    await this.ordering.retire(channel, consumer);
  }

  /**
   * The broker names only the first argument that differs, and for a queue of the other type that is a symptom
   * (x-overflow, x-delivery-limit) rather than the cause. When the queue matches what this module declares for the
   * other type, the type is what differs. The probe declaration is equivalent to the queue, so it changes nothing.
   */
  private async queueTypeMismatch(
    model: ChannelModel,
    consumer: ConsumerPlan,
  ): Promise<TopologyMismatchError | undefined> {
    const other = consumer.queueType === 'quorum' ? 'classic' : 'quorum';
    const probe = await model.createChannel().catch(() => undefined);
    if (!probe) return undefined;
    probe.on('error', () => undefined);
    try {
      await probe.assertQueue(consumer.queue, {
        durable: true,
        arguments: this.queueArguments(consumer.queue, other, consumer.extraQueueArguments),
      });
      return new TopologyMismatchError('queue', consumer.queue, 'x-queue-type', consumer.queueType, other);
    } catch {
      return undefined;
    } finally {
      await probe.close().catch(() => undefined);
    }
  }
}
