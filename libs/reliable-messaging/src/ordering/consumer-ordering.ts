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

/** The header the consistent-hash exchange hashes on: the envelope's ordering key. */
export const HASH_HEADER = 'rm-ordering-key';

/** RabbitMQ's exchange type that picks one bound queue per message from a hash of a header. */
export const CONSISTENT_HASH_EXCHANGE_TYPE = 'x-consistent-hash';

/** The plugin that provides it: shipped with RabbitMQ, not enabled by default. */
export const CONSISTENT_HASH_PLUGIN = 'rabbitmq_consistent_hash_exchange';

/**
 * The name of partition `index` of `queue`: `<queue>.p007`. Always three digits, so the names sort in
 * partition order; see `planConsumerOrdering` for why that keeps keys on their partition across broker restarts.
 */
export function partitionQueueName(queue: string, index: number): string {
  return `${queue}.p${String(index).padStart(3, '0')}`;
}
