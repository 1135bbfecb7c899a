import { Inject, Injectable } from '@nestjs/common';
import {
  ConsumerRegistry,
  DeadLetterMonitor,
  errorMessage,
  OutboxMonitor,
  QueueDepthMonitor,
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
} from 'nestjs-reliable-messaging/operations';
import { DeadLetterOperations } from '../../dead-letter/dead-letter-operations.service';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';

/** One consumer queue on the overview. */
export interface ConsumerQueueFigures {
  queue: string;
  /** Ready messages; undefined when the queue does not exist. */
  ready?: number;
  consumers?: number;
  /**
   * Estimated seconds since the oldest message (ready, or held by this process) was published, as the
   * `rm_queue_oldest_message_age_seconds` gauge; null when none waits, undefined when the queue does not exist.
   */
  oldestAgeSeconds?: number | null;
  /** Deliveries of the queue in this process's pipeline now. */
  inFlight: number;
  /** Deliveries this process finished per minute since the previous overview; undefined on the first one. */
  handledPerMinute?: number;
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
  /** The count stopped at the read budget, this many bytes: it is partial. Undefined when it did not. */
  stoppedAtReadBudget?: number;
  /** Why the queue could not be read. */
  error?: string;
}

/** Everything the overview shows. */
export interface ConsoleOverview {
  consumerQueues: ConsumerQueueFigures[];
  deadLetterQueues: DeadLetterQueueFigures[];
  /** Parked outbox rows; undefined without an outbox, an error text when it could not be read. */
  parkedOutboxRows?: number | { error: string };
  readAt: Date;
}

/** The most dead letters of one queue read to count them by reason (within the read budget). */
export const REASON_SAMPLE = 1000;

/** The shortest time between two counts a rate is worked out over; a quicker reload keeps the older count. */
const MIN_RATE_INTERVAL_MS = 1000;

/** The deliveries each consumer queue had finished at one moment. */
interface CompletedCount {
  at: number;
  byQueue: Map<string, number>;
}

/**
 * The figures of the console's overview, in one place: the queue depth monitor for consumer queues (ready,
 * consumers, oldest-message age), the consumers of this process (in flight, and the rate at which they finish
 * deliveries, from the count each keeps, between two overviews), the dead-letter monitor for dead-letter queues,
 * a read of each non-empty dead-letter queue for its reasons (which keeps no body, and stops at the admin
 * option `maxReadBytesPerRequest`), and the outbox's parked rows.
 */
@Injectable()
export class ConsoleFigures {
  /** The count of the previous overview, that the next one's rate is worked out from. */
  private previous?: CompletedCount;
  private lastRates = new Map<string, number>();

  constructor(
    private readonly depths: QueueDepthMonitor,
    private readonly deadLetters: DeadLetterMonitor,
    private readonly operations: DeadLetterOperations,
    private readonly registry: ConsumerRegistry,
    private readonly outbox: OutboxMonitor,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly messaging: ResolvedMessagingOptions,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly admin: ResolvedDeadLetterAdminOptions,
  ) {}

  /** Whether the app has an outbox (the module's `dataSource` option). */
  get hasOutbox(): boolean {
    return this.messaging.dataSource !== undefined;
  }

  async overview(): Promise<ConsoleOverview> {
    const rates = this.rates();
    const statuses = this.registry.statuses;
    const consumerQueues: ConsumerQueueFigures[] = (await this.depths.snapshot()).map((depth) => ({
      queue: depth.queue,
      ready: depth.ready,
      consumers: depth.consumers,
      oldestAgeSeconds: depth.oldestAgeSeconds === 0 && depth.ready === 0 ? null : depth.oldestAgeSeconds,
      inFlight: statuses
        .filter((status) => status.queue === depth.queue)
        .reduce((sum, status) => sum + status.inFlight, 0),
      handledPerMinute: rates.get(depth.queue),
    }));
    const deadLetterQueues: DeadLetterQueueFigures[] = [];
    for (const queue of this.operations.knownQueues())
      deadLetterQueues.push(await this.deadLetterQueue(queue));
    return {
      consumerQueues,
      deadLetterQueues,
      parkedOutboxRows: await this.parkedOutboxRows(),
      readAt: new Date(),
    };
  }

  /**
   * Deliveries finished per minute by queue since the previous count, which this one replaces; a reload within
   * MIN_RATE_INTERVAL_MS of it shows the rates of the previous overview again (none on the first).
   */
  private rates(): Map<string, number> {
    const now: CompletedCount = { at: Date.now(), byQueue: new Map() };
    for (const status of this.registry.statuses)
      now.byQueue.set(status.queue, (now.byQueue.get(status.queue) ?? 0) + status.completed);
    const previous = this.previous;
    if (previous && now.at - previous.at < MIN_RATE_INTERVAL_MS) return this.lastRates;
    this.previous = now;
    this.lastRates = new Map();
    if (!previous) return this.lastRates;
    for (const [queue, completed] of now.byQueue) {
      const before = previous.byQueue.get(queue);
      if (before !== undefined && completed >= before)
        this.lastRates.set(queue, ((completed - before) * 60_000) / (now.at - previous.at));
    }
    return this.lastRates;
  }

  private async parkedOutboxRows(): Promise<ConsoleOverview['parkedOutboxRows']> {
    if (!this.hasOutbox) return undefined;
    try {
      return (await this.outbox.backlog()).parked;
    } catch (error) {
      return { error: errorMessage(error) };
    }
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
      const budget = this.admin.maxReadBytesPerRequest;
      const count = await this.operations.countReasons(
        { queue },
        { limit: REASON_SAMPLE, maxReadBytes: budget },
      );
      figures.reasons = count.reasons;
      figures.reasonsCounted = count.counted;
      if (count.stoppedAtReadBudget) figures.stoppedAtReadBudget = budget;
    } catch (error) {
      figures.error = errorMessage(error);
    }
    return figures;
  }
}
