import type { Message } from 'amqplib';

/** What one consumer knows of its queue's messages, as publish times (epoch ms); read on scrape, never per delivery. */
export interface QueueAgeSample {
  /** The publish time of the oldest delivery this process holds unacknowledged; undefined when it holds none. */
  oldestHeldAt?: number;
  /** The publish time of the last message delivered to this process; undefined when none was, or it had no timestamp. */
  lastDeliveredAt?: number;
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
 * this process saw, without ever looking at the queue's head (RabbitMQ reports no head timestamp for a quorum
 * queue, and a basic.get with requeue would count towards its delivery limit). The estimate is the older of:
 *
 * - the oldest delivery held unacknowledged: exact, to the timestamp's 1 s resolution;
 * - while messages are ready, the ready ones. In a FIFO queue they were published after the last message
 *   delivered and after the last reading that found none ready, so `now - max(those)` bounds their age from
 *   above, too high by the publish gap before the next message. When neither is known (nothing delivered since
 *   the process started, the queue never seen empty), the time since the first reading that found messages ready
 *   bounds it from below, too low by however long they waited before that reading.
 *
 * One estimator per queue, kept by QueueDepthMonitor between readings.
 */
export class QueueAgeEstimator {
  /** The first reading of the current run of readings with messages ready. */
  private readySince?: number;
  /** The last reading that found no message ready. */
  private emptyAt?: number;

  /** The estimated age in seconds of the oldest message at `now`, given `ready` messages ready; 0 when none waits. */
  estimate(now: number, ready: number | undefined, sample: QueueAgeSample): number {
    let oldest = sample.oldestHeldAt;
    if (ready === undefined || ready === 0) {
      this.readySince = undefined;
      if (ready === 0) this.emptyAt = now;
    } else {
      this.readySince ??= now;
      const after = Math.max(sample.lastDeliveredAt ?? -Infinity, this.emptyAt ?? -Infinity);
      const readyOldest = Number.isFinite(after) ? after : this.readySince;
      oldest = oldest === undefined ? readyOldest : Math.min(oldest, readyOldest);
    }
    return oldest === undefined ? 0 : Math.max(0, (now - oldest) / 1000);
  }
}
