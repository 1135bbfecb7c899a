import type { Message } from 'amqplib';

/** What one consumer knows of its queue's messages (epoch ms); read on scrape, never worked out per delivery. */
export interface QueueAgeSample {
  /** The publish time of the oldest delivery this process holds unacknowledged; undefined when it holds none. */
  oldestHeldAt?: number;
  /** The publish time of the last message delivered to this process; undefined when none was, or it had no timestamp. */
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
 * When `message` was published, in epoch ms: its AMQP `timestamp` property (whole seconds, so up to 1 s early),
 * which the module sets when it builds a message and keeps on retries and replays. Undefined without one.
 */
export function publishedAt(message: Pick<Message, 'properties'>): number | undefined {
  const timestamp: unknown = message.properties.timestamp;
  return typeof timestamp === 'number' && Number.isFinite(timestamp) ? timestamp * 1000 : undefined;
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
