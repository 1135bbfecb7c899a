import { Injectable } from '@nestjs/common';
import type { Channel, ChannelModel } from 'amqplib';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { ConfigurationError } from '../errors/configuration.error';
import { ConsistentHashExchangeMissingError } from '../errors/consistent-hash-exchange-missing.error';
import { errorMessage } from '../util/error-text';
import {
  CONSISTENT_HASH_EXCHANGE_TYPE,
  HASH_HEADER,
  partitionQueueName,
  type ConsumerOrdering,
} from './consumer-ordering';

type KeyOrdering = Extract<ConsumerOrdering, { mode: 'key' }>;

/** Every partition gets the same share of the hash ring: one bucket. */
const PARTITION_WEIGHT = '1';

/**
 * Declares what ordering by key needs besides the partition queues themselves: the consistent-hash exchange
 * `<queue>` (hashing on the `rm-ordering-key` header), each partition bound to it with an equal weight, and,
 * once the last partition is bound, the exchange bound to the events exchange with the consumer's routing keys.
 * Routing starts only when the ring is complete, so no key is routed to a partition it will later leave.
 * TopologyService calls it for each consumer, after the consumer's queues.
 *
 * A broker without the plugin fails startup with ConsistentHashExchangeMissingError; a broker that has more
 * partitions than the consumer declares (the count was lowered) fails it with a ConfigurationError, because
 * the extra partitions would keep receiving messages that nobody consumes.
 */
@Injectable()
export class OrderingTopology {
  /** Declares what `consumer` needs when it orders by key, on `channel` of the consumer connection `model`. */
  async declare(model: ChannelModel, channel: Channel, consumer: ConsumerPlan): Promise<void> {
    const ordering = consumer.ordering;
    if (ordering?.mode !== 'key') return;
    await this.declareHashExchange(model, channel, consumer, ordering);
    await channel.bindQueue(consumer.queue, ordering.hashExchange, PARTITION_WEIGHT);
    if (ordering.partition !== ordering.partitions - 1) return;
    await this.refuseExtraPartitions(model, consumer, ordering);
    for (const key of ordering.sourceBindings) {
      await channel.bindExchange(ordering.hashExchange, consumer.exchange, key);
    }
  }

  private async declareHashExchange(
    model: ChannelModel,
    channel: Channel,
    consumer: ConsumerPlan,
    ordering: KeyOrdering,
  ): Promise<void> {
    // NOTE: an unknown exchange type is a connection-level error (503 COMMAND_INVALID): the broker closes the
    // whole connection and the declaration only rejects with "Channel ended". The reason comes on the connection.
    let connectionError: Error | undefined;
    const capture = (error: Error): void => {
      connectionError = error;
    };
    model.on('error', capture);
    try {
      await channel.assertExchange(ordering.hashExchange, CONSISTENT_HASH_EXCHANGE_TYPE, {
        durable: true,
        arguments: { 'hash-header': HASH_HEADER },
      });
    } catch (error) {
      await new Promise((resolve) => setImmediate(resolve));
      const reason = connectionError ? errorMessage(connectionError) : errorMessage(error);
      if (/unknown exchange type/i.test(reason)) {
        throw new ConsistentHashExchangeMissingError(consumer.name, reason);
      }
      throw error;
    } finally {
      model.off('error', capture);
    }
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
        'They stay bound to the hash exchange and would receive messages nobody consumes. Lowering the number of ' +
        'partitions moves keys between partitions: stop the publishers (or let the outbox hold the messages), let every ' +
        `partition drain, delete the exchange '${ordering.baseQueue}' and the partition queues from '${extra}' on ` +
        '(rabbitmqctl delete_queue / delete_exchange), then start with the new count; see docs/ordering.md.',
    );
  }
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
