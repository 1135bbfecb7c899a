import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { TopologyService } from '../amqp/topology.service';
import { OrderingTopology } from '../ordering/ordering-topology.service';
import { LaneTopology } from '../lanes/lane-topology.service';
import { DelayTopology } from '../retry/delay-topology.service';
import type { ConsumeOptions } from '../options/consume.options';
import type { SagaStepOptions } from '../options/saga.options';
import { MessageType } from '../decorators/message-type.decorator';
import type { DiscoveredConsumer } from '../discovery/discovered-consumer';
import { ConfigurationError } from '../errors/configuration.error';
import { NonRetryableError } from '../errors/non-retryable.error';
import { resolveOptions, type ReliableMessagingModuleOptions } from '../options/reliable-messaging.options';
import { PostgresClaimCheckStore } from '../claim-check/postgres-claim-check.store';
import type { ConsumerPlan } from './consumer-plan';
import { planConsumers } from './consumer-planner';
import { DEFAULT_JSON_LIMITS } from '../options/json-limits.options';
import { orderedIntake } from '../intake/ordered-intake';
import { unorderedIntake } from '../intake/unordered-intake';

@MessageType({ type: 'order.placed', version: '2.1' })
class OrderPlaced {}

@MessageType({ type: 'order.amended', version: '1.0' })
class OrderAmended {}

@MessageType({ type: 'order.paid', orderingKey: (m: OrderPaid) => m.orderId })
class OrderPaid {
  orderId = '';
}

class PaymentDeclined extends Error {}
class OutOfStock extends Error {}
const isTransient = (error: unknown): boolean => !(error instanceof RangeError);

class Billing {
  onOrderPlaced(_event: OrderPlaced): void {}
}
class Shipping {
  onOrderPlaced(_event: OrderPlaced): void {}
}

const A_DATA_SOURCE = { options: { type: 'postgres' } } as unknown as DataSource;

/** The handler `Billing.onOrderPlaced(event: OrderPlaced)` decorated with `options`. */
function billing(
  options: Partial<ConsumeOptions>,
  payloadParameterType: unknown = OrderPlaced,
): DiscoveredConsumer {
  return {
    instance: new Billing(),
    methodName: 'onOrderPlaced',
    options: options as ConsumeOptions,
    payloadParameterType,
    decorator: '@Consume',
    contextType: 'rmq',
  };
}

function plan(
  consumers: DiscoveredConsumer[],
  module: Partial<ReliableMessagingModuleOptions> = {},
): { plans: ConsumerPlan[]; warnings: string[] } {
  const options = resolveOptions(
    { urls: 'amqp://localhost', ...module },
    { databaseClaimCheckStore: (dataSource) => new PostgresClaimCheckStore(dataSource) },
  );
  const topology = new TopologyService(
    options,
    new DelayTopology(options),
    new OrderingTopology(),
    new LaneTopology(),
  );
  const warnings: string[] = [];
  const plans = planConsumers(consumers, {
    options,
    queueArguments: (queue, queueType, extra) => topology.queueArguments(queue, queueType, extra),
    warn: (message) => warnings.push(message),
  });
  return { plans, warnings };
}

/** A plan as plain data: the retry policy by its resolved options. */
function summary(consumer: ConsumerPlan): Record<string, unknown> {
  return { ...consumer, retry: consumer.retry.options };
}

/** What a module with no options gives `@Consume({ queue: 'billing' })` on `onOrderPlaced(event: OrderPlaced)`. */
const DEFAULT_PLAN = {
  name: 'Billing.onOrderPlaced',
  methodName: 'onOrderPlaced',
  contextType: 'rmq',
  queue: 'billing',
  deadLetterQueue: 'billing.dlq',
  exchange: 'events',
  bindings: ['order.placed'],
  queueType: 'quorum',
  queueArguments: {
    'x-queue-type': 'quorum',
    'x-dead-letter-exchange': 'events.dead-letter',
    'x-dead-letter-routing-key': 'billing',
    'x-delivery-limit': 20,
    'x-dead-letter-strategy': 'at-least-once',
    'x-overflow': 'reject-publish',
  },
  extraQueueArguments: {},
  concurrency: 10,
  prefetch: 10,
  rateLimit: undefined,
  deadline: { deadlineMs: 30_000, limitMs: 1_790_000 },
  messageClass: OrderPlaced,
  messageTypes: ['order.placed'],
  acceptedMajorVersions: [2],
  maxPayloadBytes: 262_144,
  jsonLimits: DEFAULT_JSON_LIMITS,
  accept: ['envelope'],
  retry: {
    maxAttempts: 12,
    initialDelayMs: 1000,
    maxDelayMs: 120_000,
    nonRetryableErrors: [],
    isRetryable: [],
    maxRedeliveries: 5,
  },
  dedup: undefined,
  reply: false,
  ordering: { mode: 'none' },
  intake: unorderedIntake,
};

describe('planConsumers', () => {
  it.each<[string, Partial<ConsumeOptions>, Partial<ReliableMessagingModuleOptions>, object]>([
    ['every setting from the defaults', {}, {}, {}],
    [
      "Nest's RMQ format beside the envelope",
      { accept: ['envelope', 'nest-rmq'] },
      {},
      { accept: ['envelope', 'nest-rmq'] },
    ],
    [
      "the module's defaults where the consumer sets nothing",
      {},
      {
        exchange: 'shop',
        defaultQueueType: 'classic',
        defaultConcurrency: 4,
        defaultPrefetch: 2,
        defaultDeadlineMs: 5_000,
        consumerTimeoutMs: 60_000,
        maxPayloadBytes: 1024,
        retry: { maxAttempts: 3, nonRetryableErrors: [PaymentDeclined] },
        dataSource: A_DATA_SOURCE,
      },
      {
        exchange: 'shop',
        queueType: 'classic',
        queueArguments: {
          'x-queue-type': 'classic',
          'x-dead-letter-exchange': 'shop.dead-letter',
          'x-dead-letter-routing-key': 'billing',
        },
        concurrency: 4,
        prefetch: 2,
        deadline: { deadlineMs: 5_000, limitMs: 54_000 },
        maxPayloadBytes: 1024,
        retry: { ...DEFAULT_PLAN.retry, maxAttempts: 3, nonRetryableErrors: [PaymentDeclined] },
        dedup: { scope: 'billing' },
      },
    ],
    [
      'a prefetch of the concurrency when neither sets one',
      { concurrency: 3 },
      {},
      { concurrency: 3, prefetch: 3 },
    ],
    [
      "the consumer's own settings over the module's",
      {
        queueType: 'classic',
        concurrency: 2,
        prefetch: 8,
        deadlineMs: 120_000,
        rateLimit: { limit: 10, periodMs: 1000 },
        retry: {
          maxAttempts: 2,
          initialDelayMs: 200,
          nonRetryableErrors: [OutOfStock],
          isRetryable: isTransient,
        },
        dedup: false,
      },
      {
        defaultConcurrency: 4,
        defaultDeadlineMs: 5_000,
        retry: { maxDelayMs: 10_000, nonRetryableErrors: [PaymentDeclined] },
        dataSource: A_DATA_SOURCE,
      },
      {
        queueType: 'classic',
        queueArguments: {
          'x-queue-type': 'classic',
          'x-dead-letter-exchange': 'events.dead-letter',
          'x-dead-letter-routing-key': 'billing',
        },
        concurrency: 2,
        prefetch: 8,
        deadline: { deadlineMs: 120_000, limitMs: 1_790_000 },
        rateLimit: { limit: 10, periodMs: 1000 },
        retry: {
          maxAttempts: 2,
          initialDelayMs: 200,
          maxDelayMs: 10_000,
          nonRetryableErrors: [PaymentDeclined, OutOfStock],
          isRetryable: [isTransient],
          maxRedeliveries: 5,
        },
        dedup: undefined,
      },
    ],
    [
      "bindings from the message types and routing keys, the module's queue arguments winning",
      {
        message: OrderAmended,
        messageTypes: ['order.amended', 'order.cancelled'],
        routingKeys: ['order.*', 'order.amended'],
        acceptedMajorVersions: [1, 2],
        queueArguments: { 'x-max-length': 1000, 'x-queue-type': 'classic' },
      },
      {},
      {
        messageClass: OrderAmended,
        messageTypes: ['order.amended', 'order.cancelled'],
        bindings: ['order.amended', 'order.cancelled', 'order.*'],
        acceptedMajorVersions: [1, 2],
        queueArguments: { ...DEFAULT_PLAN.queueArguments, 'x-max-length': 1000 },
        extraQueueArguments: { 'x-max-length': 1000, 'x-queue-type': 'classic' },
      },
    ],
    ['dedup on with a dataSource', {}, { dataSource: A_DATA_SOURCE }, { dedup: { scope: 'billing' } }],
    ['a reply consumer', { reply: true }, {}, { reply: true }],
    [
      'dedup asked for with a dataSource',
      { dedup: true },
      { dataSource: A_DATA_SOURCE },
      { dedup: { scope: 'billing' } },
    ],
    [
      "dedup on with the memory inbox of tests (inbox.store 'memory')",
      {},
      { inbox: { store: 'memory' } },
      { dedup: { scope: 'billing' } },
    ],
    [
      "ordering 'queue': one message at a time on a single-active-consumer queue",
      { ordering: 'queue' },
      {},
      {
        ordering: { mode: 'queue' },
        intake: orderedIntake,
        concurrency: 1,
        prefetch: 1,
        queueArguments: { ...DEFAULT_PLAN.queueArguments, 'x-single-active-consumer': true },
        extraQueueArguments: { 'x-single-active-consumer': true },
      },
    ],
  ])('plans %s', (_case, options, module, expected) => {
    const { plans } = plan([billing({ queue: 'billing', ...options })], module);

    expect(plans).toHaveLength(1);
    expect(summary(plans[0])).toEqual({ ...DEFAULT_PLAN, instance: plans[0].instance, ...expected });
  });

  it('hands an untyped handler the parsed JSON, accepting any type and version', () => {
    const { plans } = plan([billing({ queue: 'billing', routingKeys: ['#'] }, Object)]);

    expect(plans[0]).toMatchObject({
      messageClass: undefined,
      messageTypes: [],
      acceptedMajorVersions: [],
      bindings: ['#'],
    });
  });

  it('plans ordering by key as one consumer per partition sharing one inbox scope', () => {
    const { plans } = plan(
      [billing({ queue: 'billing', ordering: { by: 'key', partitions: 3 }, prefetch: 4 })],
      { dataSource: A_DATA_SOURCE },
    );

    expect(
      plans.map((p) => [p.queue, p.deadLetterQueue, p.bindings, p.concurrency, p.prefetch, p.dedup]),
    ).toEqual([
      ['billing.p000', 'billing.p000.dlq', [], 1, 4, { scope: 'billing' }],
      ['billing.p001', 'billing.p001.dlq', [], 1, 4, { scope: 'billing' }],
      ['billing.p002', 'billing.p002.dlq', [], 1, 4, { scope: 'billing' }],
    ]);
    expect(plans[2].ordering).toEqual({
      mode: 'key',
      partitions: 3,
      partition: 2,
      baseQueue: 'billing',
      keyExchange: 'billing.by-key.3',
      sourceBindings: ['order.placed'],
    });
    expect(plans[2].queueArguments).toMatchObject({
      'x-single-active-consumer': true,
      'x-dead-letter-routing-key': 'billing.p002',
    });
  });

  it('plans a @SagaStep() as a deduplicating consumer of its message on <saga>.<type>, with its saga plan', () => {
    const step = (options: Partial<SagaStepOptions<OrderPlaced>>): DiscoveredConsumer => ({
      ...billing({}),
      options: { queue: '' },
      decorator: '@SagaStep',
      saga: {
        saga: { name: 'fulfilment' },
        step: { message: OrderPlaced, options: { correlate: () => 'k', ...options } },
      },
    });
    const { plans } = plan([step({ concurrency: 4, onMissing: 'start' })], { dataSource: A_DATA_SOURCE });

    expect(plans.map((p) => [p.queue, p.bindings, p.messageClass, p.concurrency, p.dedup])).toEqual([
      ['fulfilment.order.placed', ['order.placed'], OrderPlaced, 4, { scope: 'fulfilment.order.placed' }],
    ]);
    expect(plans[0].saga).toMatchObject({
      saga: 'fulfilment',
      step: 'Billing.onOrderPlaced',
      onMissing: 'start',
    });

    // Key-ordered steps (the alternative to optimistic concurrency): one plan per partition, each with the saga.
    const ordered = plan([step({ ordering: { by: 'key', partitions: 2 } })], {
      dataSource: A_DATA_SOURCE,
    }).plans;
    expect(ordered.map((p) => [p.queue, p.saga?.saga, p.dedup])).toEqual([
      ['fulfilment.order.placed.p000', 'fulfilment', { scope: 'fulfilment.order.placed' }],
      ['fulfilment.order.placed.p001', 'fulfilment', { scope: 'fulfilment.order.placed' }],
    ]);
    expect(Object.isFrozen(ordered[0].saga)).toBe(true);
  });

  it('warns about a key-ordered @SagaStep() whose message type declares no orderingKey, and not when it does', () => {
    const step = (message: new () => object): DiscoveredConsumer => ({
      ...billing({}),
      options: { queue: '' },
      decorator: '@SagaStep',
      saga: {
        saga: { name: 'fulfilment' },
        step: { message, options: { correlate: () => 'k', ordering: { by: 'key', partitions: 2 } } },
      },
    });

    expect(plan([step(OrderPlaced)], { dataSource: A_DATA_SOURCE }).warnings).toEqual([
      expect.stringMatching(/ordered by key, but OrderPlaced's @MessageType\(\) declares no orderingKey/),
    ]);
    expect(plan([step(OrderPaid)], { dataSource: A_DATA_SOURCE }).warnings).toEqual([]);
  });

  it("plans lanes as one consumer per lane queue, with its own settings over the consumer's, sharing one inbox scope", () => {
    const { plans } = plan(
      [
        billing({
          queue: 'receipt',
          concurrency: 4,
          queueType: 'classic',
          lanes: {
            urgent: { concurrency: 10, maxPriority: 5 },
            bulk: { concurrency: 2, rateLimit: { limit: 5, periodMs: 1000 } },
          },
        }),
      ],
      { dataSource: A_DATA_SOURCE },
    );

    expect(
      plans.map((p) => [
        p.queue,
        p.deadLetterQueue,
        p.bindings,
        p.concurrency,
        p.prefetch,
        p.rateLimit,
        p.extraQueueArguments,
        p.dedup,
      ]),
    ).toEqual([
      [
        'receipt.urgent',
        'receipt.urgent.dlq',
        [],
        10,
        10,
        undefined,
        { 'x-max-priority': 5 },
        { scope: 'receipt' },
      ],
      ['receipt.bulk', 'receipt.bulk.dlq', [], 2, 2, { limit: 5, periodMs: 1000 }, {}, { scope: 'receipt' }],
    ]);
    expect(plans.map((p) => p.lane)).toEqual([
      {
        name: 'urgent',
        baseQueue: 'receipt',
        router: 'receipt.lanes',
        fallback: 'receipt.lanes.default',
        isDefault: true,
        sourceBindings: ['order.placed'],
        last: false,
      },
      expect.objectContaining({ name: 'bulk', isDefault: false, last: true }),
    ]);
    expect(plans[1].queueArguments).toMatchObject({ 'x-dead-letter-routing-key': 'receipt.bulk' });
  });

  it("orders each lane on its own with ordering 'queue', and takes defaultLane for messages without a lane", () => {
    const { plans } = plan([
      billing({ queue: 'receipt', ordering: 'queue', defaultLane: 'bulk', lanes: { urgent: {}, bulk: {} } }),
    ]);

    expect(plans.map((p) => [p.queue, p.concurrency, p.lane?.isDefault, p.ordering.mode])).toEqual([
      ['receipt.urgent', 1, false, 'queue'],
      ['receipt.bulk', 1, true, 'queue'],
    ]);
    expect(plans[0].queueArguments).toMatchObject({ 'x-single-active-consumer': true });
  });

  it('plans a lane ordered by key as partitions of the lane queue, fed by the lane router rather than the events exchange', () => {
    const { plans } = plan([
      billing({ queue: 'receipt', ordering: { by: 'key', partitions: 2 }, lanes: { urgent: {}, bulk: {} } }),
    ]);

    expect(plans.map((p) => [p.queue, p.bindings, p.lane?.name, p.lane?.last])).toEqual([
      ['receipt.urgent.p000', [], 'urgent', false],
      ['receipt.urgent.p001', [], 'urgent', false],
      ['receipt.bulk.p000', [], 'bulk', true],
      ['receipt.bulk.p001', [], 'bulk', true],
    ]);
    expect(plans[3].ordering).toEqual({
      mode: 'key',
      partitions: 2,
      partition: 1,
      baseQueue: 'receipt.bulk',
      keyExchange: 'receipt.bulk.by-key.2',
      sourceBindings: [],
    });
  });

  it.each<[string, Partial<ConsumeOptions>, RegExp]>([
    [
      'a concurrency an ordered consumer ignores',
      { ordering: 'queue', concurrency: 8 },
      /ordering 'queue' .*concurrency 8 is ignored/,
    ],
    [
      'an ordered consumer on a classic queue',
      { ordering: 'queue', queueType: 'classic' },
      /classic queue does not keep/,
    ],
  ])('warns at startup about %s', (_case, options, warning) => {
    expect(plan([billing({ queue: 'billing', ...options })]).warnings).toEqual([
      expect.stringMatching(warning),
    ]);
  });

  it('freezes the plan and what it owns, and leaves the decorator options alone', () => {
    const options = {
      queue: 'billing',
      messageTypes: ['order.placed'],
      queueArguments: { 'x-max-length': 10 },
    };
    const [frozen] = plan([billing(options)], { dataSource: A_DATA_SOURCE }).plans;

    for (const part of [
      frozen,
      frozen.bindings,
      frozen.messageTypes,
      frozen.queueArguments,
      frozen.deadline,
      frozen.dedup,
      frozen.ordering,
    ]) {
      expect(Object.isFrozen(part)).toBe(true);
    }
    expect(Object.isFrozen(options.messageTypes)).toBe(false);
    expect(Object.isFrozen(options.queueArguments)).toBe(false);
  });

  const DEADLINE_HINT =
    "raise consumerTimeoutMs (and the broker's consumer_timeout on RabbitMQ before 3.12) for longer handlers";
  const RATE_LIMIT =
    "@Consume on Billing.onOrderPlaced: 'rateLimit' must be { limit: 1..1000000, periodMs: 1..86400000 }, e.g. { limit: 10, periodMs: 1000 }";
  const ORDERING_SHAPE =
    "@Consume on Billing.onOrderPlaced: 'ordering' must be 'none', 'queue' or { by: 'key', partitions: N }, got";
  const PARTITIONS =
    "@Consume on Billing.onOrderPlaced: ordering { by: 'key' } needs 'partitions', an integer from 1 to 256, got";
  const PARTITIONS_HINT = `; e.g. ordering: { by: 'key', partitions: 8 } (docs/ordering.md, "Choosing the number of partitions")`;

  it.each<[string, DiscoveredConsumer[], Partial<ReliableMessagingModuleOptions>, string]>([
    [
      'no queue',
      [billing({})],
      {},
      "@Consume on Billing.onOrderPlaced: 'queue' is required, e.g. @Consume({ queue: 'billing.order-placed' })",
    ],
    [
      'a retry schedule longer than the claim-checked bodies live',
      [billing({ queue: 'billing', retry: { maxAttempts: 10, maxDelayMs: 3_600_000 } })],
      { dataSource: A_DATA_SOURCE, claimCheck: { timeToLiveMs: 3 * 3_600_000 } },
      '@Consume on Billing.onOrderPlaced: its retry schedule (retry.maxAttempts × retry.maxDelayMs = 36000000 ms) outlasts claimCheck.timeToLiveMs (10800000 ms): a retried claim-checked message would lose its body. Raise claimCheck.timeToLiveMs or shorten the retries',
    ],
    [
      'no options at all',
      [billing(undefined as unknown as ConsumeOptions)],
      {},
      "@Consume on Billing.onOrderPlaced: 'queue' is required, e.g. @Consume({ queue: 'billing.order-placed' })",
    ],
    [
      'an empty queue name',
      [billing({ queue: '' })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced queue' must be a non-empty name of at most 255 characters not starting with 'amq.', got ''",
    ],
    [
      "a queue name in the broker's reserved amq. namespace",
      [billing({ queue: 'amq.billing' })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced queue' must be a non-empty name of at most 255 characters not starting with 'amq.', got 'amq.billing'",
    ],
    [
      'a queue name over 255 characters',
      [billing({ queue: 'q'.repeat(256) })],
      {},
      `ReliableMessaging: 'Billing.onOrderPlaced queue' must be a non-empty name of at most 255 characters not starting with 'amq.', got '${'q'.repeat(256)}'`,
    ],
    [
      'an untyped handler with nothing to bind',
      [billing({ queue: 'billing' }, Object)],
      {},
      '@Consume on Billing.onOrderPlaced: nothing to bind; type the payload parameter (the first, or the one with @Payload()) with a @MessageType() class, or set messageTypes / routingKeys',
    ],
    [
      'an unknown queue type',
      [billing({ queue: 'billing', queueType: 'stream' as 'quorum' })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced queueType' must be 'quorum' or 'classic', got 'stream'",
    ],
    [
      'a concurrency of 0',
      [billing({ queue: 'billing', concurrency: 0 })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced concurrency' must be an integer from 1 to 10000, got 0",
    ],
    [
      'a fractional concurrency',
      [billing({ queue: 'billing', concurrency: 1.5 })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced concurrency' must be an integer from 1 to 10000, got 1.5",
    ],
    [
      'a prefetch above the protocol limit',
      [billing({ queue: 'billing', prefetch: 65_536 })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced prefetch' must be an integer from 1 to 65535, got 65536",
    ],
    [
      'a prefetch of 0',
      [billing({ queue: 'billing', prefetch: 0 })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced prefetch' must be an integer from 1 to 65535, got 0",
    ],
    [
      'a deadline past the consumer timeout less its margin',
      [billing({ queue: 'billing', deadlineMs: 1_790_001 })],
      {},
      `ReliableMessaging: 'Billing.onOrderPlaced deadlineMs' must be an integer from 1 to 1790000 ms (below consumerTimeoutMs 1800000 less its margin), got 1790001; ${DEADLINE_HINT}`,
    ],
    [
      "a deadline past a shorter consumer timeout's margin",
      [billing({ queue: 'billing', deadlineMs: 55_000 })],
      { consumerTimeoutMs: 60_000 },
      `ReliableMessaging: 'Billing.onOrderPlaced deadlineMs' must be an integer from 1 to 54000 ms (below consumerTimeoutMs 60000 less its margin), got 55000; ${DEADLINE_HINT}`,
    ],
    [
      'a zero deadline',
      [billing({ queue: 'billing', deadlineMs: 0 })],
      {},
      `ReliableMessaging: 'Billing.onOrderPlaced deadlineMs' must be an integer from 1 to 1790000 ms (below consumerTimeoutMs 1800000 less its margin), got 0; ${DEADLINE_HINT}`,
    ],
    [
      'a fractional deadline',
      [billing({ queue: 'billing', deadlineMs: 1.5 })],
      {},
      `ReliableMessaging: 'Billing.onOrderPlaced deadlineMs' must be an integer from 1 to 1790000 ms (below consumerTimeoutMs 1800000 less its margin), got 1.5; ${DEADLINE_HINT}`,
    ],
    [
      'a rate limit without a period',
      [billing({ queue: 'billing', rateLimit: { limit: 10 } as never })],
      {},
      RATE_LIMIT,
    ],
    [
      'a rate limit of zero',
      [billing({ queue: 'billing', rateLimit: { limit: 0, periodMs: 1000 } })],
      {},
      RATE_LIMIT,
    ],
    [
      'a rate limit period over a day',
      [billing({ queue: 'billing', rateLimit: { limit: 1, periodMs: 86_400_001 } })],
      {},
      RATE_LIMIT,
    ],
    [
      'a rate limit that is a number',
      [billing({ queue: 'billing', rateLimit: 10 as never })],
      {},
      RATE_LIMIT,
    ],
    ['a rate limit of null', [billing({ queue: 'billing', rateLimit: null as never })], {}, RATE_LIMIT],
    [
      'retry options that are not an object',
      [billing({ queue: 'billing', retry: 6 as never })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry' must be an object like { maxAttempts: 6 }",
    ],
    [
      'no attempts at all',
      [billing({ queue: 'billing', retry: { maxAttempts: 0 } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.maxAttempts' must be an integer from 1 to 100, got 0",
    ],
    [
      'a negative first delay',
      [billing({ queue: 'billing', retry: { initialDelayMs: -1 } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.initialDelayMs' must be an integer from 0 to 86400000, got -1",
    ],
    [
      'a delay cap below the first delay',
      [billing({ queue: 'billing', retry: { initialDelayMs: 5_000, maxDelayMs: 1_000 } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.maxDelayMs' must be an integer from 5000 to 86400000, got 1000",
    ],
    [
      'a delay cap over 24 hours',
      [billing({ queue: 'billing', retry: { maxDelayMs: 86_400_001 } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.maxDelayMs' must be an integer from 1000 to 86400000, got 86400001",
    ],
    [
      'too many redeliveries',
      [billing({ queue: 'billing', retry: { maxRedeliveries: 1001 } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.maxRedeliveries' must be an integer from 0 to 1000, got 1001",
    ],
    [
      'non-retryable errors named by string',
      [billing({ queue: 'billing', retry: { nonRetryableErrors: ['PaymentDeclined'] as never } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.nonRetryableErrors' must be a list of error classes, e.g. [PaymentDeclinedError]",
    ],
    [
      'one non-retryable error class not in a list',
      [billing({ queue: 'billing', retry: { nonRetryableErrors: NonRetryableError as never } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.nonRetryableErrors' must be a list of error classes, e.g. [PaymentDeclinedError]",
    ],
    [
      'a retry predicate that is not a function',
      [billing({ queue: 'billing', retry: { isRetryable: true as never } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced retry.isRetryable' must be a function (error) => boolean",
    ],
    [
      'dedup that is not a boolean',
      [billing({ queue: 'billing', dedup: 'yes' as never })],
      { dataSource: A_DATA_SOURCE },
      "@Consume on Billing.onOrderPlaced: 'dedup' must be true or false, got yes",
    ],
    [
      'reply that is not a boolean',
      [billing({ queue: 'billing', reply: 'yes' as never })],
      {},
      "@Consume on Billing.onOrderPlaced: 'reply' must be true or false, got yes",
    ],
    [
      'dedup without a dataSource',
      [billing({ queue: 'billing', dedup: true })],
      {},
      "@Consume on Billing.onOrderPlaced: dedup needs the module's dataSource option, where the inbox table lives; configure dataSource, or set dedup: false for a handler that is idempotent by construction",
    ],
    [
      'an unknown ordering',
      [billing({ queue: 'billing', ordering: 'key' as never })],
      {},
      `${ORDERING_SHAPE} 'key'`,
    ],
    [
      'ordering by something else than key',
      [billing({ queue: 'billing', ordering: { by: 'queue' } as never })],
      {},
      `${ORDERING_SHAPE} {"by":"queue"}`,
    ],
    [
      'ordering that is a boolean',
      [billing({ queue: 'billing', ordering: true as never })],
      {},
      `${ORDERING_SHAPE} true`,
    ],
    [
      'ordering by key without partitions',
      [billing({ queue: 'billing', ordering: { by: 'key' } as never })],
      {},
      `${PARTITIONS} undefined${PARTITIONS_HINT}`,
    ],
    [
      'ordering by key over 0 partitions',
      [billing({ queue: 'billing', ordering: { by: 'key', partitions: 0 } })],
      {},
      `${PARTITIONS} 0${PARTITIONS_HINT}`,
    ],
    [
      'ordering by key over 257 partitions',
      [billing({ queue: 'billing', ordering: { by: 'key', partitions: 257 } })],
      {},
      `${PARTITIONS} 257${PARTITIONS_HINT}`,
    ],
    [
      'lanes that are not an object',
      [billing({ queue: 'receipt', lanes: ['urgent'] as never })],
      {},
      "@Consume on Billing.onOrderPlaced: 'lanes' must be an object of lane names, e.g. { urgent: { concurrency: 10 }, bulk: { concurrency: 2 } }",
    ],
    [
      'a lane name with a dot',
      [billing({ queue: 'receipt', lanes: { 'ur.gent': {} } })],
      {},
      "@Consume on Billing.onOrderPlaced lanes: a lane name is 1 to 64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit, got 'ur.gent'",
    ],
    [
      "a lane named 'dlq', whose queue would pass for a dead-letter queue",
      [billing({ queue: 'receipt', lanes: { urgent: {}, dlq: {} } })],
      {},
      "@Consume on Billing.onOrderPlaced lanes: 'dlq' cannot name a lane: the lane's queue '<queue>.dlq' would take a name the module gives other things ('dlq' dead-letter queues, 'lanes' the lane router, 'p000' to 'p999' partitions)",
    ],
    [
      'a lane setting that does not exist',
      [billing({ queue: 'receipt', lanes: { bulk: { deadlineMs: 5 } as never } })],
      {},
      '@Consume on Billing.onOrderPlaced: unknown option `lanes.bulk.deadlineMs`; the options here are `lanes.bulk.concurrency`, `lanes.bulk.prefetch`, `lanes.bulk.rateLimit`, `lanes.bulk.maxPriority`',
    ],
    [
      'a misspelt option',
      [billing({ queue: 'billing', concurency: 5 } as never)],
      {},
      '@Consume on Billing.onOrderPlaced: unknown option `concurency`; did you mean `concurrency`?',
    ],
    [
      'a misspelt queue, before the missing queue',
      [billing({ queu: 'billing' } as never)],
      {},
      '@Consume on Billing.onOrderPlaced: unknown option `queu`; did you mean `queue`?',
    ],
    [
      'a misspelt retry option',
      [billing({ queue: 'billing', retry: { maxAtempts: 3 } as never })],
      {},
      '@Consume on Billing.onOrderPlaced: unknown option `retry.maxAtempts`; did you mean `retry.maxAttempts`?',
    ],
    [
      'a misspelt rate limit option',
      [billing({ queue: 'billing', rateLimit: { limit: 1, period: 1000 } as never })],
      {},
      '@Consume on Billing.onOrderPlaced: unknown option `rateLimit.period`; did you mean `rateLimit.periodMs`?',
    ],
    [
      'a misspelt ordering option',
      [billing({ queue: 'billing', ordering: { by: 'key', partition: 4 } as never })],
      {},
      '@Consume on Billing.onOrderPlaced: unknown option `ordering.partition`; did you mean `ordering.partitions`?',
    ],
    [
      "a misspelt lane's rate limit option",
      [billing({ queue: 'receipt', lanes: { bulk: { rateLimit: { limits: 1, periodMs: 10 } as never } } })],
      {},
      '@Consume on Billing.onOrderPlaced: unknown option `lanes.bulk.rateLimit.limits`; did you mean `lanes.bulk.rateLimit.limit`?',
    ],
    [
      'a default lane that is not a lane',
      [billing({ queue: 'receipt', lanes: { urgent: {} }, defaultLane: 'bulk' })],
      {},
      '@Consume on Billing.onOrderPlaced: \'defaultLane\' "bulk" is not one of its lanes (urgent)',
    ],
    [
      'a lane concurrency of 0',
      [billing({ queue: 'receipt', lanes: { bulk: { concurrency: 0 } } })],
      {},
      "ReliableMessaging: 'Billing.onOrderPlaced lane 'bulk' concurrency' must be an integer from 1 to 10000, got 0",
    ],
    [
      'accept without the envelope',
      [billing({ queue: 'billing', accept: ['nest-rmq'] })],
      {},
      "@Consume on Billing.onOrderPlaced: 'accept' must list 'envelope' and optionally 'nest-rmq', e.g. accept: ['envelope', 'nest-rmq']",
    ],
    [
      'accept with an unknown wire format',
      [billing({ queue: 'billing', accept: ['envelope', 'golevelup'] as never })],
      {},
      "@Consume on Billing.onOrderPlaced: 'accept' must list 'envelope' and optionally 'nest-rmq', e.g. accept: ['envelope', 'nest-rmq']; got \"golevelup\"",
    ],
    [
      "nest-rmq on a reply consumer, whose Nest callers wait for Nest's reply format",
      [billing({ queue: 'billing', reply: true, accept: ['envelope', 'nest-rmq'] })],
      {},
      "@Consume on Billing.onOrderPlaced: a reply consumer cannot accept 'nest-rmq': Nest's ClientProxy.send() waits for a reply in Nest's own format; move its callers to ReliableMessagingClient (same send() call) and remove nest-rmq from accept",
    ],
    [
      'two consumers on one queue',
      [billing({ queue: 'orders' }), { ...billing({ queue: 'orders' }), instance: new Shipping() }],
      {},
      "@Consume: Shipping.onOrderPlaced and Billing.onOrderPlaced both use queue 'orders'; give each consumer its own queue",
    ],
    [
      "a consumer on another consumer's partition queue",
      [
        billing({ queue: 'orders', ordering: { by: 'key', partitions: 2 } }),
        { ...billing({ queue: 'orders.p001' }), instance: new Shipping() },
      ],
      {},
      "@Consume: Shipping.onOrderPlaced and Billing.onOrderPlaced both use queue 'orders.p001'; give each consumer its own queue",
    ],
  ])('refuses %s at startup with a message that says what to set', (_case, consumers, module, message) => {
    let thrown: unknown;
    try {
      plan(consumers, module);
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(ConfigurationError);
    expect((thrown as Error).message).toBe(message);
  });
});
