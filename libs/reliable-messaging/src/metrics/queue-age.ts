import type { MessageProperties } from 'amqplib';
import { headerDate } from '../dead-letter/dead-letter-record';
import { DEAD_LETTER_HEADERS } from '../reliable-messaging.constants';

/** What one consumer knows of its queue's messages (epoch ms); read on scrape, never worked out per delivery. */
export interface QueueAgeSample {
  /** When the oldest delivery this process holds unacknowledged entered the queue (enteredQueueAt); undefined when it holds none. */
  oldestHeldAt?: number;
  /** When the last message delivered to this process entered the queue; undefined when none was, or nothing tells. */
  lastDeliveredAt?: number;
  /** When this process received that last message; undefined when none was delivered. */
  lastReceivedAt?: number;
}

/** One passive-declare reading of a queue. */
export interface QueueReading {
  /** Ready messages; undefined when the queue does not exist. */
  ready?: number;
  /** Consumers subscribed, from every process. */
  consumers?: number;
}

/**
 * When a message entered the queue it was delivered from, in epoch ms: the latest of its AMQP `timestamp` (its
 * publish, in whole seconds, so up to 1 s early), the newest x-death entry's time (a retry comes back into the
 * queue from a delay level, which dead-letters it there when its delay ends), and the time an operator replayed
 * it (`rm-dead-letter-replayed-at`). A retry or a replay keeps the first publish's timestamp: on its own, that
 * would count earlier attempts, their backoff and time spent dead-lettered as waiting in this queue. The broker
 * keeps one x-death entry per delay level with the time it first used it, so a message retried several times at
 * the longest level looks older than it is, by up to its earlier waits there. Undefined without any of them.
 */
export function enteredQueueAt(
  properties: Pick<MessageProperties, 'timestamp' | 'headers'>,
): number | undefined {
  const timestamp: unknown = properties.timestamp;
  let at = typeof timestamp === 'number' && Number.isFinite(timestamp) ? timestamp * 1000 : undefined;
  const headers = properties.headers;
  if (!headers) return at;
  const deaths: unknown = headers['x-death'];
  const newestDeath = Array.isArray(deaths) ? (deaths[0] as { time?: unknown } | undefined) : undefined;
  for (const value of [newestDeath?.time, headers[DEAD_LETTER_HEADERS.replayedAt]]) {
    const time = value === undefined ? undefined : headerDate(value)?.getTime();
    if (time !== undefined && Number.isFinite(time) && (at === undefined || time > at)) at = time;
  }
  return at;
}

/**
 * Estimates the age of the oldest message of one queue from passive-declare readings and what its consumer in
 * this process saw, without looking at the queue's head: RabbitMQ reports no head timestamp for a quorum queue,
 * and a basic.get with requeue would count towards its delivery limit. The estimate is the older of:
 *
 * - the oldest delivery this process holds unacknowledged: exact, to the timestamp's 1 s resolution;
 * - while messages are ready and this process took a delivery since its previous reading: the last message it
 *   took. The queue hands messages out in order, so those still ready were published after it: the estimate is
 *   too high by the publish gap between that message and the next one, never too low;
 * - while messages are ready and no process consumes the queue: the time since the first reading of this run of
 *   readings with messages ready. Too low by how long they had waited before that reading: at most the interval
 *   between two readings when the previous one found the queue empty.
 *
 * A process that holds nothing and took nothing of a queue that others consume reports only what it holds (0):
 * the process that takes the messages reports them, and Prometheus takes the maximum over processes.
 * One estimator per queue, kept by QueueDepthMonitor between readings.
 */
export class QueueAgeEstimator {
  /** The previous reading. */
  private readAt?: number;
  /** The first reading of the current run of readings with messages ready. */
  private readySince?: number;

  /** The estimated age in seconds of the oldest message at `now`; 0 when none waits. */
  estimate(now: number, reading: QueueReading, sample: QueueAgeSample): number {
    const previous = this.readAt;
    this.readAt = now;
    let oldest = sample.oldestHeldAt;
    const ready = reading.ready ?? 0;
    if (ready === 0) {
      this.readySince = undefined;
    } else {
      this.readySince ??= now;
      const delivering =
        sample.lastReceivedAt !== undefined && (previous === undefined || sample.lastReceivedAt >= previous);
      const readyOldest = delivering
        ? sample.lastDeliveredAt
        : reading.consumers === 0
          ? this.readySince
          : undefined;
      if (readyOldest !== undefined)
        oldest = oldest === undefined ? readyOldest : Math.min(oldest, readyOldest);
    }
    return oldest === undefined ? 0 : Math.max(0, (now - oldest) / 1000);
  }
}
