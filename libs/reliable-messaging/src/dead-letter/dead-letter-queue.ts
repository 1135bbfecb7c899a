import type { QueueType } from '../options/reliable-messaging.options';
import { errorMessage } from '../util/error-text';

/** The suffix of a consumer's dead-letter queue. */
export const DEAD_LETTER_QUEUE_SUFFIX = '.dlq';

/**
 * The delivery limit of a quorum dead-letter queue: high enough never to be reached.
 *
 * NOTE: RabbitMQ 4.0 to 4.2 give every quorum queue a default delivery limit of 20 and count each requeue
 * toward it, dropping the message after that (a dead-letter queue has no dead-letter queue of its own). The
 * tools read a dead-letter queue by taking messages and requeueing those they leave, so with the default the
 * oldest dead letters would vanish after twenty inspections. `-1` (unlimited) is not an option: RabbitMQ 3.x
 * accepts it and then drops a message at its first requeue.
 */
export const DEAD_LETTER_QUEUE_DELIVERY_LIMIT = 1_000_000_000;

/** The arguments a consumer's dead-letter queue (`<queue>.dlq`) is declared with. */
export function deadLetterQueueArguments(queueType: QueueType): Record<string, unknown> {
  return queueType === 'quorum'
    ? { 'x-queue-type': queueType, 'x-delivery-limit': DEAD_LETTER_QUEUE_DELIVERY_LIMIT }
    : { 'x-queue-type': queueType };
}

/** A broker error about a dead-letter queue, in words: a missing queue most often means the app never started. */
export function describeQueueError(error: unknown): string {
  const text = errorMessage(error);
  return /NOT_FOUND|404/.test(text)
    ? 'it does not exist (the app declares it when it first starts with that consumer)'
    : text;
}

/** The consumer queue of a dead-letter queue name (`orders.dlq` → `orders`). */
export function consumerQueueOf(deadLetterQueue: string): string {
  return deadLetterQueue.endsWith(DEAD_LETTER_QUEUE_SUFFIX)
    ? deadLetterQueue.slice(0, -DEAD_LETTER_QUEUE_SUFFIX.length)
    : deadLetterQueue;
}
