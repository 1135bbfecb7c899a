import { describe, expect, it } from '@jest/globals';
import type { Channel, ChannelModel } from 'amqplib';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { ORDERING_BUCKETS } from './ordering-bucket';
import { bucketsOf, OrderingTopology } from './ordering-topology.service';
import { MAX_PARTITIONS } from '../options/ordering.options';

describe('OrderingTopology', () => {
  it('gives every bucket to exactly one partition, for every partition count', () => {
    for (let partitions = 1; partitions <= MAX_PARTITIONS; partitions++) {
      const owners = new Map<number, number>();
      for (let partition = 0; partition < partitions; partition++) {
        for (const bucket of bucketsOf({ partition, partitions })) {
          expect(owners.has(bucket)).toBe(false);
          owners.set(bucket, partition);
        }
      }
      expect(owners.size).toBe(ORDERING_BUCKETS);
      for (const [bucket, partition] of owners) expect(partition).toBe(bucket % partitions);
    }
  });

  it('shares the buckets evenly: no partition has more than one bucket above another', () => {
    for (const partitions of [1, 3, 7, 16, 100, 256]) {
      const sizes = Array.from(
        { length: partitions },
        (_, partition) => bucketsOf({ partition, partitions }).length,
      );
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
  });

  it('declares nothing for a consumer that does not order by key', async () => {
    const untouchable = new Proxy(
      {},
      {
        get: () => {
          throw new Error('must not be called');
        },
      },
    );
    const consumer = {
      name: 'Audit.onMoved',
      queue: 'audit',
      ordering: { mode: 'queue' },
    } as unknown as ConsumerPlan;
    const topology = new OrderingTopology();

    await expect(
      topology.declare(untouchable as ChannelModel, untouchable as Channel, consumer),
    ).resolves.toBeUndefined();
    await expect(topology.retire(untouchable as Channel, consumer)).resolves.toBeUndefined();
  });
});
