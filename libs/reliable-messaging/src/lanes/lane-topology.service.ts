import { Injectable, Logger } from '@nestjs/common';
import type { Channel, ChannelModel } from 'amqplib';
import { brokerVersionAtLeast } from '../amqp/broker-version';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { HEADERS } from '../reliable-messaging.constants';

/** The first RabbitMQ version whose quorum queues honour message priorities (two levels, nothing declared). */
export const QUORUM_PRIORITIES_SINCE = [4, 0] as const;

/**
 * Declares what a consumer with lanes needs besides its lane queues: the router `<queue>.lanes`, a headers
 * exchange whose alternate exchange is the fanout `<queue>.lanes.default`; each lane queue (or, for a lane
 * ordered by key, its key exchange) bound to the router on `rm-lane = <lane>`, the default lane's
 * also to the fallback; and, with the last lane, the router bound to the events exchange with the consumer's
 * routing keys, so routing starts once every lane is bound.
 * A message whose `rm-lane` names none of the consumer's lanes, or that has none, matches no binding of the
 * router and goes to its alternate exchange: the default lane. TopologyService calls it for each consumer,
 * after the consumer's queues; it also says once when a quorum queue's `maxPriority` has no effect.
 */
@Injectable()
export class LaneTopology {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly warned = new Set<string>();

  /** Declares what `consumer` needs when it has lanes, on `channel` of the consumer connection `model`. */
  async declare(model: ChannelModel, channel: Channel, consumer: ConsumerPlan): Promise<void> {
    this.warnIgnoredPriorities(model, consumer);
    const lane = consumer.lane;
    if (!lane) return;
    await channel.assertExchange(lane.fallback, 'fanout', { durable: true });
    await channel.assertExchange(lane.router, 'headers', { durable: true, alternateExchange: lane.fallback });
    const byLane = { 'x-match': 'all', [HEADERS.lane]: lane.name };
    const ordering = consumer.ordering;
    if (ordering.mode === 'key') {
      // A key-ordered lane's partitions are fed by its key exchange (OrderingTopology), bound here once every
      // bucket has its partition, with the last partition.
      if (ordering.partition !== ordering.partitions - 1) return;
      await channel.bindExchange(ordering.keyExchange, lane.router, '', byLane);
      if (lane.isDefault) await channel.bindExchange(ordering.keyExchange, lane.fallback, '');
    } else {
      await channel.bindQueue(consumer.queue, lane.router, '', byLane);
      if (lane.isDefault) await channel.bindQueue(consumer.queue, lane.fallback, '');
    }
    if (!lane.last) return;
    for (const key of lane.sourceBindings) await channel.bindExchange(lane.router, consumer.exchange, key);
  }

  private warnIgnoredPriorities(model: ChannelModel, consumer: ConsumerPlan): void {
    if (consumer.maxPriority === undefined || consumer.queueType !== 'quorum') return;
    if (brokerVersionAtLeast(model.connection.serverProperties.version, QUORUM_PRIORITIES_SINCE)) return;
    if (this.warned.has(consumer.queue)) return;
    this.warned.add(consumer.queue);
    this.logger.warn(
      `${consumer.name}: maxPriority is set on quorum queue '${consumer.queue}', but RabbitMQ ` +
        `${String(model.connection.serverProperties.version)} ignores priorities on quorum queues (4.0 and later ` +
        "honour two levels); messages are delivered in queue order. Use queueType 'classic' for priorities here, or lanes",
    );
  }
}
