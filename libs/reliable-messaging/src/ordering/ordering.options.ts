import { ConfigurationError } from '../errors/configuration.error';

/**
 * How a consumer orders its messages, set with `@Consume({ ordering })`. See docs/ordering.md for the cost of
 * each choice.
 *
 * - `'none'` (the default): handled in parallel, in no particular order; handlers must be order-independent.
 * - `'queue'`: one message at a time across every replica, in queue order (a single-active-consumer queue).
 * - `{ by: 'key', partitions: N }`: messages with the same ordering key one at a time in publish order, other
 *   keys in parallel over N single-active-consumer partition queues.
 */
export type OrderingOption = 'none' | 'queue' | { by: 'key'; partitions: number };

/** A consumer's ordering once resolved; a key-ordered `@Consume()` becomes one consumer per partition. */
export type ConsumerOrdering =
  | { mode: 'none' }
  | { mode: 'queue' }
  | {
      mode: 'key';
      /** How many partitions the consumer has. */
      partitions: number;
      /** Which of them this consumer reads, from 0. */
      partition: number;
      /** The queue named in `@Consume()`, or the lane's queue: the partitions are `<queue>.p000` and on. */
      baseQueue: string;
      /** The consistent-hash exchange that spreads the consumer's messages over its partitions. */
      hashExchange: string;
      /** Routing keys the hash exchange is bound with on the events exchange (the consumer's bindings); none for a lane, whose router feeds it. */
      sourceBindings: readonly string[];
    };

/** The most partitions a key-ordered consumer may have (each is a queue and a dead-letter queue). */
export const MAX_PARTITIONS = 256;

/** The header the consistent-hash exchange hashes on: the envelope's ordering key. */
export const HASH_HEADER = 'rm-ordering-key';

/** RabbitMQ's exchange type that picks one bound queue per message from a hash of a header. */
export const CONSISTENT_HASH_EXCHANGE_TYPE = 'x-consistent-hash';

/** The plugin that provides it: shipped with RabbitMQ, not enabled by default. */
export const CONSISTENT_HASH_PLUGIN = 'rabbitmq_consistent_hash_exchange';

/** `@Consume({ ordering })` read and checked, before a key-ordered consumer is split into its partitions. */
export type ResolvedOrderingOption =
  { mode: 'none' } | { mode: 'queue' } | { mode: 'key'; partitions: number };

/** Reads `@Consume({ ordering })`, failing with a ConfigurationError that says what is accepted. */
export function resolveOrderingOption(value: unknown, where: string): ResolvedOrderingOption {
  if (value === undefined || value === 'none') return { mode: 'none' };
  if (value === 'queue') return { mode: 'queue' };
  if (typeof value === 'object' && value !== null && (value as { by?: unknown }).by === 'key') {
    const partitions = (value as { partitions?: unknown }).partitions;
    if (
      typeof partitions !== 'number' ||
      !Number.isInteger(partitions) ||
      partitions < 1 ||
      partitions > MAX_PARTITIONS
    ) {
      throw new ConfigurationError(
        `${where}: ordering { by: 'key' } needs 'partitions', an integer from 1 to ${MAX_PARTITIONS}, got ${String(partitions)}; ` +
          `e.g. ordering: { by: 'key', partitions: 8 } (docs/ordering.md, "Choosing the number of partitions")`,
      );
    }
    return { mode: 'key', partitions };
  }
  throw new ConfigurationError(
    `${where}: 'ordering' must be 'none', 'queue' or { by: 'key', partitions: N }, got ${describe(value)}`,
  );
}

/**
 * The name of partition `index` of `queue`: `<queue>.p007`. Always three digits, so the names sort in
 * partition order; see `planConsumerOrdering` for why that keeps keys on their partition across broker restarts.
 */
export function partitionQueueName(queue: string, index: number): string {
  return `${queue}.p${String(index).padStart(3, '0')}`;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
