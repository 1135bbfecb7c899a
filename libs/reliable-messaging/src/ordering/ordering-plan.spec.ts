import { describe, expect, it } from '@jest/globals';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { ConsumeOptions } from '../options/consume.options';
import { ConfigurationError } from '../errors/configuration.error';
import { RetryPolicy } from '../retry/retry-policy';
import { resolveRetryOptions } from '../options/retry.options';
import { DEFAULT_JSON_LIMITS } from '../options/json-limits.options';
import { ORDERED_DEFAULT_PREFETCH, planConsumerOrdering, type QueueArgumentsBuilder } from './ordering-plan';
import { MAX_PARTITIONS, resolveOrderingOption } from '../options/ordering.options';
import { partitionQueueName } from './consumer-ordering';
import { orderedIntake } from '../intake/ordered-intake';
import { unorderedIntake } from '../intake/unordered-intake';

/** Stands in for TopologyService.queueArguments: what matters is which queue and extras it is asked for. */
const queueArguments: QueueArgumentsBuilder = (queue, queueType, extra) => ({
  ...extra,
  'x-queue-type': queueType,
  'x-dead-letter-routing-key': queue,
});

/** The consumer planned as unordered, as the planner hands it over. */
function unordered(options: ConsumeOptions): ConsumerPlan {
  return {
    name: 'Billing.onOrderPlaced',
    instance: {},
    methodName: 'onOrderPlaced',
    contextType: 'rmq',
    queue: options.queue,
    deadLetterQueue: `${options.queue}.dlq`,
    exchange: 'events',
    bindings: ['order.placed', 'order.amended'],
    queueType: options.queueType ?? 'quorum',
    queueArguments: queueArguments(
      options.queue,
      options.queueType ?? 'quorum',
      options.queueArguments ?? {},
    ),
    extraQueueArguments: options.queueArguments ?? {},
    concurrency: options.concurrency ?? 10,
    prefetch: options.prefetch ?? 10,
    deadline: { deadlineMs: 30_000, limitMs: 1_790_000 },
    messageTypes: ['order.placed'],
    acceptedMajorVersions: [1],
    jsonLimits: DEFAULT_JSON_LIMITS,
    maxPayloadBytes: 262_144,
    accept: ['envelope'],
    retry: new RetryPolicy(resolveRetryOptions(undefined)),
    reply: false,
    ordering: { mode: 'none' },
    intake: unorderedIntake,
  };
}

function plan(options: Partial<ConsumeOptions> = {}): {
  base: ConsumerPlan;
  consumers: ConsumerPlan[];
  warnings: string[];
} {
  const all: ConsumeOptions = { queue: 'billing.order-placed', ...options };
  const warnings: string[] = [];
  const ordering = resolveOrderingOption(all.ordering, '@Consume on Billing.onOrderPlaced');
  const base = unordered(all);
  const consumers = planConsumerOrdering(base, ordering, all, queueArguments, (w) => warnings.push(w));
  return { base, consumers, warnings };
}

describe('planConsumerOrdering', () => {
  it.each([[undefined], ['none' as const]])(
    'leaves a consumer with ordering %s as it is, with the unordered intake',
    (ordering) => {
      const { base, consumers, warnings } = plan({ ordering, concurrency: 10 });

      expect(consumers).toEqual([base]);
      expect(consumers[0]).toBe(base);
      expect(consumers[0].intake).toBe(unorderedIntake);
      expect(warnings).toEqual([]);
    },
  );

  it("makes an ordering 'queue' consumer's queue single-active-consumer with one message at a time, with the ordered intake", () => {
    const { consumers } = plan({ ordering: 'queue', queueArguments: { 'x-max-length': 1000 } });

    expect(consumers).toHaveLength(1);
    expect(consumers[0].intake).toBe(orderedIntake);
    expect(consumers[0]).toMatchObject({
      queue: 'billing.order-placed',
      deadLetterQueue: 'billing.order-placed.dlq',
      bindings: ['order.placed', 'order.amended'],
      concurrency: 1,
      prefetch: ORDERED_DEFAULT_PREFETCH,
      ordering: { mode: 'queue' },
      queueArguments: {
        'x-single-active-consumer': true,
        'x-max-length': 1000,
        'x-dead-letter-routing-key': 'billing.order-placed',
      },
      extraQueueArguments: { 'x-single-active-consumer': true, 'x-max-length': 1000 },
    });
  });

  it('keeps a prefetch the consumer sets itself', () => {
    expect(plan({ ordering: 'queue', prefetch: 20 }).consumers[0].prefetch).toBe(20);
  });

  it('says at startup that a concurrency above 1 is ignored, and only when one was asked for', () => {
    expect(plan({ ordering: 'queue', concurrency: 8 }).warnings).toEqual([
      expect.stringMatching(/^Billing\.onOrderPlaced: ordering 'queue' .*concurrency 8 is ignored/),
    ]);
    expect(plan({ ordering: { by: 'key', partitions: 4 }, concurrency: 8 }).warnings).toEqual([
      expect.stringMatching(/one message at a time per partition; concurrency 8 is ignored/),
    ]);
    expect(plan({ ordering: 'queue' }).warnings).toEqual([]);
    expect(plan({ ordering: 'queue', concurrency: 1 }).warnings).toEqual([]);
  });

  it('says at startup that an ordered consumer on a classic queue cannot bound crash loops', () => {
    for (const ordering of ['queue', { by: 'key', partitions: 4 }] as const) {
      expect(plan({ ordering, queueType: 'classic' }).warnings).toEqual([
        expect.stringMatching(
          /^Billing\.onOrderPlaced: .*classic queue does not keep.*use queueType 'quorum'/,
        ),
      ]);
    }
    expect(plan({ queueType: 'classic' }).warnings).toEqual([]);
  });

  it('turns ordering by key into one single-active-consumer queue per partition, each with its own dead-letter queue', () => {
    const { consumers } = plan({ ordering: { by: 'key', partitions: 3 } });

    expect(consumers.map((c) => [c.queue, c.deadLetterQueue, c.concurrency])).toEqual([
      ['billing.order-placed.p000', 'billing.order-placed.p000.dlq', 1],
      ['billing.order-placed.p001', 'billing.order-placed.p001.dlq', 1],
      ['billing.order-placed.p002', 'billing.order-placed.p002.dlq', 1],
    ]);
    for (const [partition, consumer] of consumers.entries()) {
      expect(consumer.name).toBe('Billing.onOrderPlaced');
      expect(consumer.intake).toBe(orderedIntake);
      expect(consumer.bindings).toEqual([]);
      expect(consumer.queueArguments).toMatchObject({
        'x-single-active-consumer': true,
        'x-dead-letter-routing-key': consumer.queue,
      });
      expect(consumer.ordering).toEqual({
        mode: 'key',
        partitions: 3,
        partition,
        baseQueue: 'billing.order-placed',
        keyExchange: 'billing.order-placed.by-key.3',
        sourceBindings: ['order.placed', 'order.amended'],
      });
    }
  });

  it('names partitions so that they sort in partition order, as the broker rebuilds the hash ring', () => {
    const names = Array.from({ length: MAX_PARTITIONS }, (_, i) => partitionQueueName('q', i));

    expect([...names].sort()).toEqual(names);
    expect(names.at(-1)).toBe('q.p255');
  });

  it.each([
    [{ by: 'key' }, /needs 'partitions', an integer from 1 to 256, got undefined/],
    [{ by: 'key', partitions: 0 }, /got 0/],
    [{ by: 'key', partitions: 257 }, /got 257/],
    [{ by: 'key', partitions: 2.5 }, /got 2.5/],
    [{ by: 'key', partitions: '8' }, /got 8/],
    ['key', /must be 'none', 'queue' or \{ by: 'key', partitions: N \}, got 'key'/],
    [{ by: 'queue' }, /got \{"by":"queue"\}/],
    [true, /got true/],
  ])('refuses ordering %j with a message that says what is accepted', (ordering, message) => {
    const attempt = (): unknown => plan({ ordering: ordering as ConsumeOptions['ordering'] });

    expect(attempt).toThrow(ConfigurationError);
    expect(attempt).toThrow(message);
    expect(attempt).toThrow(/^@Consume on Billing\.onOrderPlaced: /);
  });
});
