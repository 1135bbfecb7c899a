import { Inject, Injectable } from '@nestjs/common';
import type { Channel, ChannelModel } from 'amqplib';
import { HEADERS } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { withDeclarationChannel } from '../amqp/declaration-channel';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import {
  DELAY_RESOLUTION_MS,
  delayLevelName,
  deliverExchangeName,
  levelBindingPattern,
  levelsFor,
  levelTtlMs,
} from './delay-levels';

/**
 * Declares the retry delay levels (see delay-levels.ts) on every consumer connection, before the consumers'
 * topology (MessagingLifecycle calls it), and binds each consumer's queue to the deliver exchange on its own name
 * (`rm-retry-queue` header; TopologyService calls it for each consumer), so a delayed message comes back to the
 * queue it failed in and to no other. The levels are shared by every consumer of the module's exchange. A process
 * declares only the levels its consumers' longest delay needs (10 queues for the default 60 s cap, 20 at most),
 * since every level is a queue the broker keeps; a process without consumers declares none.
 */
@Injectable()
export class DelayTopology {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /** The arguments of level `level`'s queue. */
  levelArguments(level: number): Record<string, unknown> {
    const exchange = this.options.exchange;
    const args: Record<string, unknown> = {
      'x-queue-type': this.options.defaultQueueType,
      'x-message-ttl': levelTtlMs(level),
      'x-dead-letter-exchange':
        level === 0 ? deliverExchangeName(exchange) : delayLevelName(exchange, level - 1),
    };
    if (this.options.defaultQueueType === 'quorum') {
      // NOTE: at-least-once dead-lettering keeps an expired message in its level until the next level has
      // confirmed it; RabbitMQ requires reject-publish overflow for it.
      args['x-dead-letter-strategy'] = 'at-least-once';
      args['x-overflow'] = 'reject-publish';
    }
    return args;
  }

  /**
   * How many levels this process needs: enough for its consumers' longest retry delay plus a redelivery
   * checkpoint's step, and for `scheduling.maxDelayMs` when scheduled messages wait in the levels; none for a
   * process with neither.
   */
  levelCount(consumers: readonly ConsumerPlan[]): number {
    const scheduling = this.options.scheduling;
    if (consumers.length === 0 && !scheduling?.brokerDelays) return 0;
    const longest = Math.max(
      0,
      ...consumers.map((consumer) => consumer.retry.options.maxDelayMs),
      scheduling?.brokerDelays ? scheduling.maxDelayMs : 0,
    );
    return levelsFor(longest + DELAY_RESOLUTION_MS);
  }

  /**
   * Declares the levels this process needs (levelCount) and the deliver exchange; run before the consumers'
   * topology and the scheduled messages' republish queue, which bind to it.
   */
  async declareLevels(model: ChannelModel, consumers: readonly ConsumerPlan[]): Promise<void> {
    const levels = this.levelCount(consumers);
    if (levels === 0) return;
    const exchange = this.options.exchange;
    await withDeclarationChannel(model, async (channel) => {
      const deliver = deliverExchangeName(exchange);
      await channel.assertExchange(deliver, 'headers', { durable: true });
      for (let level = 0; level < levels; level++) {
        const name = delayLevelName(exchange, level);
        const below = level === 0 ? deliver : delayLevelName(exchange, level - 1);
        await channel.assertExchange(name, 'topic', { durable: true });
        await channel.assertQueue(name, { durable: true, arguments: this.levelArguments(level) });
        await channel.bindQueue(name, name, levelBindingPattern(level, 1));
        await channel.bindExchange(below, name, levelBindingPattern(level, 0));
      }
    });
  }

  /** Binds the consumer's queue to the deliver exchange on its own name; run with the consumer's topology. */
  async bindConsumer(channel: Channel, consumer: ConsumerPlan): Promise<void> {
    await channel.bindQueue(consumer.queue, deliverExchangeName(this.options.exchange), '', {
      'x-match': 'all',
      [HEADERS.retryQueue]: consumer.queue,
    });
  }
}
