import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { ConsumeOptions } from '../options/consume.options';
import { keyExchangeName, partitionQueueName, type ConsumerOrdering } from './consumer-ordering';
import type { ResolvedOrderingOption } from '../options/ordering.options';
import { orderedIntake } from '../intake/ordered-intake';

/** Builds a queue's arguments the way TopologyService does (dead-lettering, quorum backstop), plus `extra`. */
export type QueueArgumentsBuilder = (
  queue: string,
  queueType: ConsumerPlan['queueType'],
  extra: Readonly<Record<string, unknown>>,
) => Record<string, unknown>;

/** An ordered consumer's prefetch unless it sets one: nothing is fetched past the message in hand. */
export const ORDERED_DEFAULT_PREFETCH = 1;

/**
 * Turns one resolved `@Consume()` (planned as unordered) into the consumers that run it, by its resolved
 * `ordering` option; `asked` is what the decorator set itself, since an ordered consumer's defaults differ.
 * This is where a consumer's intake is chosen (intake/consumer-intake.ts), once:
 *
 * - `'none'`: the consumer as it is, with the unordered intake.
 * - `'queue'`: the ordered intake, and the queue becomes single-active-consumer (`x-single-active-consumer`):
 *   the broker delivers to one subscriber across all replicas and hands over to the next when it goes.
 *   Concurrency is 1, and the prefetch defaults to 1 so that a message handed back to the broker is the next one
 *   delivered again.
 * - `{ by: 'key', partitions: N }`: N such consumers, one per partition queue `<queue>.p000` to
 *   `<queue>.p<N-1>`, each with its own dead-letter queue. The queues are not bound to the events exchange
 *   themselves: the key exchange `<queue>.by-key.<N>` is, which routes each ordering-key bucket to partition
 *   `bucket mod N` (see OrderingTopology). The map is a function of the key and N alone: no broker state.
 */
export function planConsumerOrdering(
  plan: ConsumerPlan,
  ordering: ResolvedOrderingOption,
  asked: Pick<ConsumeOptions, 'concurrency' | 'prefetch' | 'queueArguments'>,
  queueArguments: QueueArgumentsBuilder,
  warn: (message: string) => void,
): ConsumerPlan[] {
  const { name } = plan;
  if (ordering.mode === 'none') return [plan];

  if (asked.concurrency !== undefined && asked.concurrency > 1) {
    warn(
      `${name}: ordering ${ordering.mode === 'queue' ? "'queue'" : 'by key'} handles one message at a time per ${ordering.mode === 'queue' ? 'queue' : 'partition'}; concurrency ${asked.concurrency} is ignored` +
        (ordering.mode === 'queue'
          ? " (ordering { by: 'key', partitions: N } handles different keys in parallel)"
          : ''),
    );
  }
  if (plan.queueType === 'classic') {
    warn(
      `${name}: an ordered consumer handles a redelivery in place and bounds crash loops with the quorum queue's ` +
        'x-delivery-count, which a classic queue does not keep: a message that crashes every replica is ' +
        "redelivered without end; use queueType 'quorum' (the default)",
    );
  }
  const extra = { ...(asked.queueArguments ?? {}), 'x-single-active-consumer': true };
  const ordered = (queue: string, own: ConsumerOrdering): ConsumerPlan => ({
    ...plan,
    queue,
    deadLetterQueue: `${queue}.dlq`,
    queueArguments: queueArguments(queue, plan.queueType, extra),
    extraQueueArguments: extra,
    concurrency: 1,
    prefetch: asked.prefetch ?? ORDERED_DEFAULT_PREFETCH,
    ordering: own,
    intake: orderedIntake,
  });

  if (ordering.mode === 'queue') return [ordered(plan.queue, ordering)];

  const partitions = Array.from({ length: ordering.partitions }, (_, partition) =>
    ordered(partitionQueueName(plan.queue, partition), {
      mode: 'key',
      partitions: ordering.partitions,
      partition,
      baseQueue: plan.queue,
      keyExchange: keyExchangeName(plan.queue, ordering.partitions),
      sourceBindings: plan.bindings,
    }),
  );
  // The partitions are bound to the key exchange only, never to the events exchange directly.
  return partitions.map((partition) => ({ ...partition, bindings: [] }));
}
