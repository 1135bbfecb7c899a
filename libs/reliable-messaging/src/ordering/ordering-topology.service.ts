import { Injectable } from '@nestjs/common';
import type { Channel, ChannelModel } from 'amqplib';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { ConfigurationError } from '../errors/configuration.error';
import { errorMessage } from '../util/error-text';
import { bucketRoutingKey, ORDERING_BUCKETS } from './ordering-bucket';
import {
  keyExchangeName,
  partitionQueueName,
  unbucketedExchangeName,
  type ConsumerOrdering,
} from './consumer-ordering';

type KeyOrdering = Extract<ConsumerOrdering, { mode: 'key' }>;

/**
 * Declares what ordering by key needs besides the partition queues themselves:
 *
 * - the key exchange `<queue>.by-key.<N>` (direct), with partition `p` bound on the routing key of every
 *   bucket `b` with `b mod N = p`. Publishers add a message's bucket as a BCC routing key (ordering-bucket.ts),
 *   so each key's messages reach one partition, by a map that is a function of the key and N alone: nothing in
 *   the broker's state (a node restart, the order bindings come back in) can move a key;
 * - its alternate exchange `<queue>.by-key.unbucketed` (fanout), bound to partition 0: a message that carries
 *   no bucket (a plain AMQP client that sets none) is handled, in order with the others without one;
 * - once the last partition is bound, the key exchange bound to the events exchange with the consumer's routing
 *   keys, so routing starts only when every bucket has its partition.
 *
 * `retire` then deletes the key exchange of the previous partition count, if the count grew, and the
 * consistent-hash exchange named after the queue that versions before 0.2 declared, both after the new exchange
 * is bound, so there is no moment in which the consumer receives nothing. TopologyService calls `declare` for
 * each consumer after its queues, and `retire` after its lanes.
 *
 * A broker that has more partitions than the consumer declares (the count was lowered) fails startup with a
 * ConfigurationError, because the extra partitions would keep the messages routed to them before.
 */
@Injectable()
export class OrderingTopology {
  /** Per base queue, how many partitions existed before this declaration, found when partition 0 is declared. */
  private readonly previousCounts = new Map<string, number>();

  /** Declares what `consumer` needs when it orders by key, on `channel` of the consumer connection `model`. */
  async declare(model: ChannelModel, channel: Channel, consumer: ConsumerPlan): Promise<void> {
    const ordering = consumer.ordering;
    if (ordering?.mode !== 'key') return;
    const unbucketed = unbucketedExchangeName(ordering.baseQueue);
    if (ordering.partition === 0) {
      this.previousCounts.set(ordering.baseQueue, await existingPartitions(model, ordering));
      await channel.assertExchange(unbucketed, 'fanout', { durable: true });
      await channel.bindQueue(consumer.queue, unbucketed, '');
    }
    await channel.assertExchange(ordering.keyExchange, 'direct', {
      durable: true,
      alternateExchange: unbucketed,
    });
    await Promise.all(
      bucketsOf(ordering).map((bucket) =>
        channel.bindQueue(consumer.queue, ordering.keyExchange, bucketRoutingKey(bucket)),
      ),
    );
    if (ordering.partition !== ordering.partitions - 1) return;
    await this.refuseExtraPartitions(model, consumer, ordering);
    for (const key of ordering.sourceBindings) {
      await channel.bindExchange(ordering.keyExchange, consumer.exchange, key);
    }
  }

  /**
   * Deletes, once `consumer`'s last partition is bound, what routed to its partitions before: the key exchange
   * of the previous, lower partition count, and the consistent-hash exchange earlier versions named after the
   * queue. Deleting an exchange that does not exist is a no-op.
   */
  async retire(channel: Channel, consumer: ConsumerPlan): Promise<void> {
    const ordering = consumer.ordering;
    if (ordering?.mode !== 'key' || ordering.partition !== ordering.partitions - 1) return;
    const previous = this.previousCounts.get(ordering.baseQueue);
    this.previousCounts.delete(ordering.baseQueue);
    if (previous !== undefined && previous !== ordering.partitions) {
      await channel.deleteExchange(keyExchangeName(ordering.baseQueue, previous));
    }
    await channel.deleteExchange(ordering.baseQueue);
  }

  /** Fails when partition N exists: the consumer used to have more partitions than it declares now. */
  private async refuseExtraPartitions(
    model: ChannelModel,
    consumer: ConsumerPlan,
    ordering: KeyOrdering,
  ): Promise<void> {
    const extra = partitionQueueName(ordering.baseQueue, ordering.partitions);
    if (!(await queueExists(model, extra))) return;
    throw new ConfigurationError(
      `${consumer.name} declares ${ordering.partitions} partitions of '${ordering.baseQueue}', but the broker has more ('${extra}' exists). ` +
        'They would keep the messages routed to them before, and nobody would consume them. Lowering the number of ' +
        'partitions moves keys between partitions: stop the publishers (or let the outbox hold the messages), let every ' +
        `partition drain, delete the partition queues from '${extra}' on (rabbitmqctl delete_queue), then start ` +
        'with the new count; see docs/ordering.md.',
    );
  }
}

/** The buckets partition `partition` of `partitions` receives: every bucket `b` with `b mod partitions = partition`. */
export function bucketsOf(ordering: Pick<KeyOrdering, 'partition' | 'partitions'>): number[] {
  const buckets: number[] = [];
  for (let bucket = ordering.partition; bucket < ORDERING_BUCKETS; bucket += ordering.partitions) {
    buckets.push(bucket);
  }
  return buckets;
}

/**
 * How many partitions of `ordering`'s queue existed before this declaration, seen while partition 0 is
 * declared (the others come after it): N when the last one exists, else the length of the run from partition 0,
 * found by bisection. Partitions are only ever added at the end, since a lower count is refused.
 */
async function existingPartitions(model: ChannelModel, ordering: KeyOrdering): Promise<number> {
  const exists = (index: number) => queueExists(model, partitionQueueName(ordering.baseQueue, index));
  if (await exists(ordering.partitions - 1)) return ordering.partitions;
  let [low, high] = [0, ordering.partitions - 1]; // partition `low` exists, partition `high` does not
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (await exists(middle)) low = middle;
    else high = middle;
  }
  return high;
}

/** Whether `queue` exists, checked passively on a throwaway channel (a missing queue closes the channel). */
async function queueExists(model: ChannelModel, queue: string): Promise<boolean> {
  const probe = await model.createChannel();
  probe.on('error', () => undefined);
  try {
    await probe.checkQueue(queue);
    return true;
  } catch (error) {
    if (/NOT_FOUND/.test(errorMessage(error))) return false;
    throw error;
  } finally {
    await probe.close().catch(() => undefined);
  }
}
