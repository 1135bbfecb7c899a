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
      /** The direct exchange that routes each ordering-key bucket to its partition: `<queue>.by-key.<N>`. */
      keyExchange: string;
      /** Routing keys the key exchange is bound with on the events exchange (the consumer's bindings); none for a lane, whose router feeds it. */
      sourceBindings: readonly string[];
    };

/**
 * The name of partition `index` of `queue`: `<queue>.p007`. Always three digits, so the names sort in
 * partition order.
 */
export function partitionQueueName(queue: string, index: number): string {
  return `${queue}.p${String(index).padStart(3, '0')}`;
}

/**
 * The exchange that routes `queue`'s ordering-key buckets over `partitions` partitions. The count is in the
 * name because the bindings depend on it: a consumer that changes its count gets an exchange of its own, and
 * the old one is deleted once the new one is bound (OrderingTopology).
 */
export function keyExchangeName(queue: string, partitions: number): string {
  return `${queue}.by-key.${partitions}`;
}

/** Where a message without a bucket goes, whatever the count: a fanout exchange bound to partition 0. */
export function unbucketedExchangeName(queue: string): string {
  return `${queue}.by-key.unbucketed`;
}
