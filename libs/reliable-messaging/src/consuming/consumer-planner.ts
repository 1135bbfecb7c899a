import type { Type } from '@nestjs/common';
import type { DiscoveredConsumer } from '../discovery/discovered-consumer';
import { getMessageDefinition } from '../decorators/message-type.decorator';
import { ConfigurationError } from '../errors/configuration.error';
import { assertDeadline, maxDeadlineMs } from '../options/deadline-limits';
import { resolveRateLimit } from '../options/rate-limit.options';
import { consumerLane, resolveLanesOption } from '../lanes/lane-plan';
import { laneQueueName } from '../lanes/consumer-lane';
import { planConsumerOrdering, type QueueArgumentsBuilder } from '../ordering/ordering-plan';
import { resolveOrderingOption } from '../options/ordering.options';
import { unorderedIntake } from '../intake/unordered-intake';
import { assertInteger, assertName, assertQueueType } from '../options/option-assertions';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { assertKnownConsumeOptions } from '../options/consume.options';
import { RetryPolicy } from '../retry/retry-policy';
import { assertBodiesOutliveRetries } from '../claim-check/claim-check-lifetime';
import { mergeRetryOptions } from '../options/retry.options';
import { resolveAccept } from '../options/wire-format';
import type { ConsumerPlan } from './consumer-plan';
import { assertNoManualSettlement } from './manual-settlement';
import { assertDistinctSagas, planSagaStep } from '../saga/saga-step-planner';

/** A first parameter of these types names no message class: the handler gets the parsed JSON. */
const PRIMITIVES = new Set<unknown>([Object, String, Number, Boolean, Array, Promise, undefined]);

/** What planning needs besides the consumers: the module's options and the topology's queue arguments. */
export interface PlanningContext {
  options: ResolvedMessagingOptions;
  /** The arguments a queue is declared with (TopologyService.queueArguments). */
  queueArguments: QueueArgumentsBuilder;
  /** Reports a setting that works but probably not as meant. */
  warn: (message: string) => void;
}

/**
 * Resolves every `@Consume()` handler into its plans (one per partition when ordered by key), each option
 * defaulted from the module's and checked; fails startup with a ConfigurationError that says how to fix the
 * first wrong option, or when two consumers share a queue.
 */
export function planConsumers(
  discovered: readonly DiscoveredConsumer[],
  context: PlanningContext,
): ConsumerPlan[] {
  const plans = discovered.flatMap((consumer) => planConsumer(consumer, context));
  assertOwnQueues(plans);
  assertDistinctSagas(
    plans.flatMap((plan) =>
      plan.saga ? [{ saga: plan.saga, className: plan.instance.constructor.name }] : [],
    ),
  );
  return plans;
}

/** The plans of one `@Consume()` handler: itself, or one per lane, or one per partition when ordered by key. */
export function planConsumer(discovered: DiscoveredConsumer, context: PlanningContext): ConsumerPlan[] {
  const { options: module, queueArguments, warn } = context;
  const { instance, methodName, contextType, moduleKey } = discovered;
  const name = `${instance.constructor.name}.${methodName}`;
  // A saga step is planned as the consumer its @SagaStep() stands for, with the saga's own plan beside.
  const step = discovered.saga
    ? planSagaStep(discovered.saga, name, module.dataSource !== undefined || module.inbox.store === 'memory')
    : undefined;
  const options = step ? step.consume : discovered.options;
  const where = `${discovered.decorator} on ${name}`;
  if (typeof options === 'object' && options !== null) assertKnownConsumeOptions(options, where);
  assertNoManualSettlement((instance as Record<string, unknown>)[methodName], where);
  if (!options || typeof options.queue !== 'string') {
    throw new ConfigurationError(
      `${where}: 'queue' is required, e.g. @Consume({ queue: 'billing.order-placed' })`,
    );
  }
  const queue = options.queue;
  assertName(`${name} queue`, queue);

  const candidate = options.message ?? discovered.payloadParameterType;
  const messageClass = PRIMITIVES.has(candidate) ? undefined : (candidate as Type<object>);
  const messageDefinition = getMessageDefinition(messageClass);
  const messageTypes = [...(options.messageTypes ?? (messageDefinition ? [messageDefinition.type] : []))];
  const bindings = [...new Set([...messageTypes, ...(options.routingKeys ?? [])])];
  if (bindings.length === 0) {
    throw new ConfigurationError(
      `${where}: nothing to bind; type the payload parameter (the first, or the one with @Payload()) with a @MessageType() class, or set messageTypes / routingKeys`,
    );
  }
  const acceptedMajorVersions = [
    ...(options.acceptedMajorVersions ?? (messageDefinition ? [messageDefinition.major] : [])),
  ];

  const queueType = options.queueType ?? module.defaultQueueType;
  assertQueueType(`${name} queueType`, queueType);
  const deadlineMs = options.deadlineMs ?? module.defaultDeadlineMs;
  assertDeadline(`${name} deadlineMs`, deadlineMs, module.consumerTimeoutMs);
  const retry = new RetryPolicy(mergeRetryOptions(module.retry, options.retry, `${name} retry`));
  assertBodiesOutliveRetries(module.claimCheck, retry.options, where);
  const dedup = resolveDedup(
    options.dedup,
    module.dataSource !== undefined || module.inbox.store === 'memory',
    where,
  );
  const ordering = resolveOrderingOption(options.ordering, where);
  if (step && ordering.mode === 'key' && !messageDefinition?.orderingKey) {
    // Without a key of its type, each message is keyed by its own id: an instance's messages spread over the
    // partitions and race as an unordered step's do (still without losing an update, see docs/sagas.md).
    warn(
      `${where}: ordered by key, but ${messageClass?.name ?? 'its message'}'s @MessageType() declares no orderingKey, ` +
        "so each message is keyed by its own id and an instance's messages still run side by side; declare " +
        "orderingKey reading the instance's key (what correlate reads), or pass it to every publish()",
    );
  }
  const reply = resolveReply(options.reply, where);
  const accept = resolveAccept(options.accept, reply, where);
  const lanes = resolveLanesOption(options.lanes, options.defaultLane, where);
  // A consumer with lanes runs one plan per lane, as ordering by key runs one per partition (and both, one per
  // partition of each lane): each lane's settings over the consumer's, its own queue, and no binding of its own
  // on the events exchange (the lane router has them, see LaneTopology).
  const variants = lanes
    ? lanes.lanes.map((lane, index) => ({
        asked: { ...options, ...lane.options },
        label: `${name} lane '${lane.name}'`,
        queue: laneQueueName(queue, lane.name),
        lane: consumerLane(queue, bindings, lanes, index),
      }))
    : [{ asked: options, label: name, queue, lane: undefined }];

  return variants
    .flatMap(({ asked, label, queue: own, lane }) => {
      const concurrency = asked.concurrency ?? module.defaultConcurrency;
      assertInteger(`${label} concurrency`, concurrency, 1, 10_000);
      const prefetch = asked.prefetch ?? module.defaultPrefetch ?? concurrency;
      assertInteger(`${label} prefetch`, prefetch, 1, 65_535);
      const rateLimit = resolveRateLimit(asked.rateLimit, lane ? `${where} lane '${lane.name}'` : where);
      const maxPriority = asked.maxPriority;
      if (maxPriority !== undefined) assertInteger(`${label} maxPriority`, maxPriority, 1, 255);
      const extraQueueArguments: Record<string, unknown> = { ...asked.queueArguments };
      // NOTE: a classic queue takes priorities only when declared with x-max-priority; a quorum queue takes no
      // such argument (RabbitMQ 4.x gives it two levels always, 3.x ignores priorities on it), see docs/lanes.md.
      if (maxPriority !== undefined && queueType === 'classic')
        extraQueueArguments['x-max-priority'] = maxPriority;
      const plan: ConsumerPlan = {
        name,
        instance,
        methodName,
        contextType,
        moduleKey,
        queue: own,
        deadLetterQueue: `${own}.dlq`,
        exchange: module.exchange,
        bindings: lane ? [] : bindings,
        queueType,
        queueArguments: queueArguments(own, queueType, extraQueueArguments),
        extraQueueArguments,
        maxPriority,
        lane,
        concurrency,
        prefetch,
        rateLimit,
        deadline: { deadlineMs, limitMs: maxDeadlineMs(module.consumerTimeoutMs) },
        messageClass,
        messageTypes,
        acceptedMajorVersions,
        maxPayloadBytes: module.maxPayloadBytes,
        jsonLimits: module.jsonLimits,
        accept,
        retry,
        dedup: dedup ? { scope: queue } : undefined,
        reply,
        ordering: { mode: 'none' },
        intake: unorderedIntake,
        saga: step?.saga,
      };
      return planConsumerOrdering(
        plan,
        ordering,
        { ...asked, queueArguments: extraQueueArguments },
        queueArguments,
        warn,
      );
    })
    .map(freeze);
}

/** Each consumer owns its queue (and dead-letter queue): two handlers on one queue would take turns at random. */
function assertOwnQueues(plans: readonly ConsumerPlan[]): void {
  const owners = new Map<string, string>();
  for (const plan of plans) {
    const other = owners.get(plan.queue);
    if (other) {
      throw new ConfigurationError(
        `@Consume: ${plan.name} and ${other} both use queue '${plan.queue}'; give each consumer its own queue`,
      );
    }
    owners.set(plan.queue, plan.name);
  }
}

/**
 * `dedup`, on by default where there is an inbox (a dataSource, or the memory inbox of tests); on without one is
 * refused, since the inbox table lives in the dataSource.
 */
function resolveDedup(value: unknown, hasInbox: boolean, where: string): boolean {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new ConfigurationError(
      `${where}: 'dedup' must be true or false, got ${typeof value === 'string' ? value : JSON.stringify(value)}`,
    );
  }
  if (value === true && !hasInbox) {
    throw new ConfigurationError(
      `${where}: dedup needs the module's dataSource option, where the inbox table lives; ` +
        'configure dataSource, or set dedup: false for a handler that is idempotent by construction',
    );
  }
  return value ?? hasInbox;
}

/** `reply`, off by default: a handler answers requests only when it says so. */
function resolveReply(value: unknown, where: string): boolean {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new ConfigurationError(
      `${where}: 'reply' must be true or false, got ${typeof value === 'string' ? value : JSON.stringify(value)}`,
    );
  }
  return value ?? false;
}

/** Freezes a plan and what it owns; the handler's instance and message class stay the application's. */
function freeze(plan: ConsumerPlan): ConsumerPlan {
  for (const part of [
    plan.bindings,
    plan.messageTypes,
    plan.acceptedMajorVersions,
    plan.accept,
    plan.queueArguments,
    plan.extraQueueArguments,
    plan.rateLimit,
    plan.deadline,
    plan.dedup,
    plan.ordering,
    plan.ordering.mode === 'key' ? plan.ordering.sourceBindings : undefined,
    plan.lane?.sourceBindings,
    plan.lane,
    plan.saga,
  ]) {
    if (part) Object.freeze(part);
  }
  return Object.freeze(plan);
}
