import { Injectable } from '@nestjs/common';
import { DeadLetterMonitor } from '../../../dead-letter/dead-letter-monitor.service';
import { QueueDepthMonitor } from '../../../metrics/queue-depth.monitor';
import { errorMessage } from '../../../util/error-text';
import { DeadLetterOperations } from '../../dead-letter-operations.service';

/** One consumer queue on the overview. */
export interface ConsumerQueueFigures {
  queue: string;
  /** Ready messages; undefined when the queue does not exist. */
  ready?: number;
  consumers?: number;
  /** Seconds since the oldest ready message was published; undefined while nothing measures it. */
  oldestAgeSeconds?: number | null;
}

/** One dead-letter queue on the overview. */
export interface DeadLetterQueueFigures {
  queue: string;
  deadLetterQueue: string;
  depth?: number;
  oldestAgeSeconds?: number | null;
  /** Dead letters by reason, most first, over the oldest `reasonsCounted` of them. */
  reasons: Array<{ reason: string; count: number }>;
  reasonsCounted: number;
  /** Why the queue could not be read. */
  error?: string;
}

/** Everything the overview shows. */
export interface ConsoleOverview {
  consumerQueues: ConsumerQueueFigures[];
  deadLetterQueues: DeadLetterQueueFigures[];
  readAt: Date;
}

/** The most dead letters of one queue read to count them by reason. */
export const REASON_SAMPLE = 1000;

/**
 * The figures of the console's overview, in one place: the queue depth monitor for consumer queues, the
 * dead-letter monitor for dead-letter queues, and a read of each non-empty dead-letter queue for its reasons.
 * A measure of a consumer queue's oldest message, when the module gains one, fills `oldestAgeSeconds` here.
 */
@Injectable()
export class ConsoleFigures {
  constructor(
    private readonly depths: QueueDepthMonitor,
    private readonly deadLetters: DeadLetterMonitor,
    private readonly operations: DeadLetterOperations,
  ) {}

  async overview(): Promise<ConsoleOverview> {
    const consumerQueues: ConsumerQueueFigures[] = (await this.depths.snapshot()).map((depth) => ({
      queue: depth.queue,
      ready: depth.ready,
      consumers: depth.consumers,
      oldestAgeSeconds: undefined,
    }));
    const deadLetterQueues: DeadLetterQueueFigures[] = [];
    for (const queue of this.operations.knownQueues())
      deadLetterQueues.push(await this.deadLetterQueue(queue));
    return { consumerQueues, deadLetterQueues, readAt: new Date() };
  }

  private async deadLetterQueue(queue: string): Promise<DeadLetterQueueFigures> {
    const figures: DeadLetterQueueFigures = {
      queue,
      deadLetterQueue: `${queue}.dlq`,
      reasons: [],
      reasonsCounted: 0,
    };
    try {
      const [stats] = await this.deadLetters.read([queue]);
      Object.assign(figures, { depth: stats.depth, oldestAgeSeconds: stats.oldestAgeSeconds });
      if (stats.depth === 0) return figures;
      const { deadLetters } = await this.operations.list({ queue }, { limit: REASON_SAMPLE });
      const counts = new Map<string, number>();
      for (const { reason } of deadLetters) counts.set(reason, (counts.get(reason) ?? 0) + 1);
      figures.reasons = [...counts]
        .map(([reason, count]) => ({ reason, count }))
        .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
      figures.reasonsCounted = deadLetters.length;
    } catch (error) {
      figures.error = errorMessage(error);
    }
    return figures;
  }
}
