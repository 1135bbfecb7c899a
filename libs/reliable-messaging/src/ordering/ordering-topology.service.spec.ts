import { EventEmitter } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import type { Channel, ChannelModel } from 'amqplib';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { ConsistentHashExchangeMissingError } from '../errors/consistent-hash-exchange-missing.error';
import { OrderingTopology } from './ordering-topology.service';

/** What RabbitMQ 3.10 to 4.x answers when the plugin is off, as amqplib reports it (captured from a real broker). */
const UNKNOWN_TYPE =
  'Connection closed: 503 (COMMAND-INVALID) with message "COMMAND_INVALID - unknown exchange type \'x-consistent-hash\'"';

const partition = {
  name: 'Tracking.onMoved',
  queue: 'tracking.p000',
  exchange: 'events',
  ordering: {
    mode: 'key',
    partitions: 2,
    partition: 0,
    baseQueue: 'tracking',
    hashExchange: 'tracking',
    sourceBindings: ['shipment.moved'],
  },
} as unknown as ConsumerPlan;

/**
 * The broker closes the whole connection on an unknown exchange type, and the declaration itself only rejects
 * with "Channel ended": the spec replays that sequence to check the error a user gets.
 */
function declarationWith(
  assertExchange: (model: EventEmitter) => Promise<unknown>,
): (consumer: ConsumerPlan) => Promise<void> {
  const model = new EventEmitter();
  model.on('error', () => undefined);
  const channel = {
    assertExchange: () => assertExchange(model),
    bindQueue: async () => ({}),
  } as unknown as Channel;
  return (consumer) => new OrderingTopology().declare(model as unknown as ChannelModel, channel, consumer);
}

describe('OrderingTopology', () => {
  it('turns the connection closed for an unknown exchange type into an error that says how to enable the plugin', async () => {
    const declare = declarationWith(async (model) => {
      model.emit('error', new Error(UNKNOWN_TYPE));
      throw new Error('Channel ended, no reply will be forthcoming');
    });

    const failure = declare(partition);

    await expect(failure).rejects.toThrow(ConsistentHashExchangeMissingError);
    await expect(failure).rejects.toThrow(
      /^Tracking\.onMoved orders messages by key, .*unknown exchange type 'x-consistent-hash'.*rabbitmq-plugins enable rabbitmq_consistent_hash_exchange/,
    );
  });

  it('passes any other declaration failure on unchanged', async () => {
    const refused = new Error("PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'tracking'");
    const declare = declarationWith(async () => {
      throw refused;
    });

    await expect(declare(partition)).rejects.toBe(refused);
  });

  it('declares nothing for a consumer that does not order by key', async () => {
    const declare = declarationWith(async () => {
      throw new Error('must not be called');
    });

    await expect(declare({ ...partition, ordering: { mode: 'queue' } })).resolves.toBeUndefined();
  });
});
