import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { PublisherConnection } from '../amqp/publisher-connection.service';
import { ConsumerRegistry } from '../consuming/consumer-registry.service';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { OverdueHandlers } from '../flow-control/overdue-handlers.service';
import { DatabaseAvailability } from '../database/database-availability.service';
import { DeadLetterMonitor } from '../dead-letter/dead-letter-monitor.service';
import { InboxStats } from '../inbox/inbox-stats.service';
import { OutboxMonitor } from '../outbox/outbox-monitor.service';
import { OutboxRelay } from '../outbox/outbox-relay.service';
import { ClaimCheckPruner } from '../claim-check/claim-check-pruner.service';
import { ScheduledMessages } from '../scheduling/scheduled-messages.service';
import { ScheduledPromoter } from '../scheduling/scheduled-promoter.service';
import type { ClaimCheckStoreStats } from '../options/claim-check.options';
import { errorMessage } from '../util/error-text';
import { withTimeout } from '../util/with-timeout';
import { MessagingMetrics } from './messaging-metrics.service';
import { QueueDepthMonitor } from './queue-depth.monitor';

/**
 * How old a message of `consumer`'s queue may get while all is well: one attempt past its deadline, then the
 * longest backoff. A consumer that retries in place (an ordered one) holds the message through every attempt and
 * backoff, so its limit is that times its attempts.
 */
export function ageLimitSeconds(consumer: Pick<ConsumerPlan, 'deadline' | 'retry' | 'intake'>): number {
  const attempt = consumer.deadline.deadlineMs + consumer.retry.options.maxDelayMs;
  const attempts = consumer.intake.retriesInPlace ? consumer.retry.options.maxAttempts : 1;
  return (attempt * attempts) / 1000;
}

/**
 * The gauges read when Prometheus scrapes: each broker connection (`connection="consume"` or `"publish"`), each consumer's state, queue and dead-letter
 * depth, the outbox backlog and relay totals, the scheduled messages, and the claim-check store's size; it also counts the inbox's duplicates as they happen. Each source is read under `probeTimeoutMs`; a source that fails or times out
 * leaves its gauges empty for that scrape (never a stale value) and counts in `rm_metrics_collect_errors_total`.
 */
@Injectable()
export class MetricsCollector implements OnModuleInit {
  private readonly logger = new Logger('ReliableMessaging');
  private collectErrors!: Counter<'source'>;
  /** Readings already counted as failed: several gauges share one reading. */
  private readonly counted = new WeakSet<Promise<unknown>>();

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly metrics: MessagingMetrics,
    private readonly consumerConnection: ConsumerConnection,
    private readonly publisherConnection: PublisherConnection,
    private readonly registry: ConsumerRegistry,
    private readonly queues: QueueDepthMonitor,
    private readonly overdue: OverdueHandlers,
    private readonly outbox: OutboxMonitor,
    private readonly relay: OutboxRelay,
    private readonly inbox: InboxStats,
    private readonly deadLetters: DeadLetterMonitor,
    private readonly database: DatabaseAvailability,
    private readonly claimChecks: ClaimCheckPruner,
    private readonly scheduled: ScheduledMessages,
    private readonly promoter: ScheduledPromoter,
  ) {}

  onModuleInit(): void {
    const metrics = this.metrics;
    this.collectErrors = metrics.own(
      'rm_metrics_collect_errors_total',
      new Counter({
        name: 'rm_metrics_collect_errors_total',
        help: 'Scrapes in which a source (broker queues, outbox, dead letters) could not be read.',
        labelNames: ['source'],
        registers: [],
      }),
    );
    const connections = [this.consumerConnection, this.publisherConnection];
    this.gauge(
      'rm_broker_connected',
      'Whether a broker connection (consume or publish) is up (1) or not (0).',
      ['connection'],
      (gauge) => {
        for (const connection of connections)
          gauge.set({ connection: connection.role }, connection.isConnected ? 1 : 0);
      },
    );
    this.gauge(
      'rm_broker_blocked',
      'Whether the broker blocks a connection (consume or publish) because of a memory or disk alarm.',
      ['connection'],
      (gauge) => {
        for (const connection of connections)
          gauge.set({ connection: connection.role }, connection.isBlocked ? 1 : 0);
      },
    );
    this.gauge(
      'rm_consumer_up',
      'Whether this process is subscribed to the queue (1) or not (0).',
      ['queue'],
      (gauge) => {
        for (const status of this.registry.statuses)
          gauge.set({ queue: status.queue }, status.consuming ? 1 : 0);
      },
    );
    this.gauge(
      'rm_consumer_in_flight',
      'Deliveries this process holds unacknowledged, per queue.',
      ['queue'],
      (gauge) => {
        for (const status of this.registry.statuses) gauge.set({ queue: status.queue }, status.inFlight);
      },
    );
    if (this.options.dataSource) {
      this.gauge(
        'rm_database_available',
        'Whether the database answers (1), or consumers that need it are paused for an outage (0).',
        [],
        (gauge) => {
          gauge.set(this.database.isAvailable ? 1 : 0);
        },
      );
    }
    this.gauge('rm_consumer_concurrency', 'Handlers a consumer may run at once.', ['queue'], (gauge) => {
      for (const consumer of this.registry.consumers)
        gauge.set({ queue: consumer.queue }, consumer.concurrency);
    });
    this.gauge('rm_handlers_overdue', 'Handlers still running after their deadline.', ['queue'], (gauge) => {
      for (const consumer of this.registry.consumers)
        gauge.set({ queue: consumer.queue }, this.overdue.count(consumer.queue));
    });
    this.gauge('rm_queue_depth', 'Ready messages in a consumer queue.', ['queue'], async (gauge) => {
      for (const depth of await this.read('queues', this.queues.snapshot())) {
        if (depth.ready !== undefined) gauge.set({ queue: depth.queue }, depth.ready);
      }
    });
    this.gauge(
      'rm_queue_consumers',
      'Consumers subscribed to a queue, across every process.',
      ['queue'],
      async (gauge) => {
        for (const depth of await this.read('queues', this.queues.snapshot())) {
          if (depth.consumers !== undefined) gauge.set({ queue: depth.queue }, depth.consumers);
        }
      },
    );
    this.gauge(
      'rm_queue_oldest_message_age_seconds',
      'Estimated age of the oldest message in a consumer queue, ready or held by this process, from its publish timestamp; 0 when none waits (see docs/operations.md for the method and its error bound).',
      ['queue'],
      async (gauge) => {
        for (const depth of await this.read('queues', this.queues.snapshot())) {
          if (depth.oldestAgeSeconds !== undefined) gauge.set({ queue: depth.queue }, depth.oldestAgeSeconds);
        }
      },
    );
    this.gauge(
      'rm_consumer_age_limit_seconds',
      "A consumer's handler deadline plus its retry backoff cap: a message older than this waits for no attempt of its own.",
      ['queue'],
      (gauge) => {
        for (const consumer of this.registry.consumers)
          gauge.set({ queue: consumer.queue }, ageLimitSeconds(consumer));
      },
    );
    this.gauge(
      'rm_dead_letter_depth',
      "Messages in a queue's dead-letter queue.",
      ['queue'],
      async (gauge) => {
        for (const stats of await this.read('dead-letters', this.deadLetters.snapshot())) {
          gauge.set({ queue: stats.queue }, stats.depth);
        }
      },
    );
    this.gauge(
      'rm_dead_letter_oldest_age_seconds',
      "Age of the oldest message in a queue's dead-letter queue; 0 when it is empty.",
      ['queue'],
      async (gauge) => {
        for (const stats of await this.read('dead-letters', this.deadLetters.snapshot())) {
          gauge.set({ queue: stats.queue }, stats.oldestAgeSeconds ?? 0);
        }
      },
    );
    this.inbox.onDuplicate((duplicate) => {
      const consumer = this.registry.consumers.find((candidate) => candidate.queue === duplicate.queue);
      if (consumer)
        metrics.deduplicated.inc({
          queue: consumer.queue,
          type: metrics.typeLabel(consumer, duplicate.type),
        });
    });
    if (this.options.dataSource) {
      this.outboxMetrics();
      this.scheduledMetrics();
    }
    if (this.claimChecks.enabled) this.claimCheckMetrics();
  }

  /** The claim-check store's size, read at most once a second (a listing, for the file and object stores). */
  private claimCheckMetrics(): void {
    let reading: { at: number; stats: Promise<ClaimCheckStoreStats | undefined> } | undefined;
    const stats = async (): Promise<ClaimCheckStoreStats> => {
      if (!reading || Date.now() - reading.at > 1000)
        reading = { at: Date.now(), stats: this.claimChecks.stats() };
      return (await this.read('claim-check', reading.stats)) ?? { bodies: 0, bytes: 0 };
    };
    this.gauge('rm_claim_check_bodies', 'Bodies kept in the claim-check store.', [], async (gauge) => {
      gauge.set((await stats()).bodies);
    });
    this.gauge(
      'rm_claim_check_bytes',
      'Bytes of the bodies kept in the claim-check store.',
      [],
      async (gauge) => {
        gauge.set((await stats()).bytes);
      },
    );
    this.gauge(
      'rm_claim_check_oldest_age_seconds',
      "Age of the oldest body in the claim-check store; 0 when it is empty. Above claimCheck.deadLetterTimeToLiveMs (dead letters' copies live that long), the pruner is behind.",
      [],
      async (gauge) => {
        const { oldestAt } = await stats();
        gauge.set(oldestAt ? Math.max(0, (Date.now() - oldestAt.getTime()) / 1000) : 0);
      },
    );
  }

  private outboxMetrics(): void {
    let reading: { at: number; backlog: ReturnType<OutboxMonitor['backlog']> } | undefined;
    const backlog = () => {
      if (!reading || Date.now() - reading.at > 1000)
        reading = { at: Date.now(), backlog: this.outbox.backlog() };
      return this.read('outbox', reading.backlog);
    };
    this.gauge('rm_outbox_pending', 'Outbox rows not yet published.', [], async (gauge) => {
      gauge.set((await backlog()).pending);
    });
    this.gauge(
      'rm_outbox_oldest_age_seconds',
      'Age of the oldest unpublished outbox row; 0 when none waits.',
      [],
      async (gauge) => {
        gauge.set((await backlog()).oldestAgeSeconds);
      },
    );
    this.gauge('rm_outbox_parked', 'Outbox rows set aside as unpublishable.', [], async (gauge) => {
      gauge.set((await backlog()).parked);
    });
    const relay = this.relay;
    this.metrics.own(
      'rm_outbox_relayed_total',
      new Counter({
        name: 'rm_outbox_relayed_total',
        help: "Outbox rows this process's relay handled, by outcome (published, failed and retried later, parked).",
        labelNames: ['outcome'],
        registers: [],
        collect() {
          const stats = relay.stats;
          this.reset();
          this.inc({ outcome: 'published' }, stats.published);
          this.inc({ outcome: 'failed' }, stats.failed);
          this.inc({ outcome: 'parked' }, stats.parked);
        },
      }),
    );
  }

  /**
   * The scheduled messages waiting and the lateness of the most overdue one, read at most once a second, in one
   * query that stays cheap however many wait: the count is exact up to EXACT_COUNT_BELOW rows and the planner's
   * estimate above, and the lateness is the first entry of the delivery-time index.
   */
  private scheduledMetrics(): void {
    let reading: { at: number; backlog: ReturnType<ScheduledMessages['backlog']> } | undefined;
    const backlog = () => {
      if (!reading || Date.now() - reading.at > 1000)
        reading = { at: Date.now(), backlog: this.scheduled.backlog() };
      return this.read('scheduled', reading.backlog);
    };
    this.gauge(
      'rm_scheduled_messages',
      'Scheduled messages not yet due or not yet moved to the outbox: exact up to 100000, estimated from the table size above.',
      [],
      async (gauge) => {
        gauge.set((await backlog()).scheduled);
      },
    );
    this.gauge(
      'rm_scheduled_oldest_overdue_seconds',
      'How late the most overdue scheduled message is (due but not yet moved to the outbox); 0 when none is.',
      [],
      async (gauge) => {
        gauge.set((await backlog()).oldestOverdueSeconds);
      },
    );
    const promoter = this.promoter;
    this.metrics.own(
      'rm_scheduled_promoted_total',
      new Counter({
        name: 'rm_scheduled_promoted_total',
        help: 'Scheduled messages this process moved into the outbox when they were due.',
        registers: [],
        collect() {
          this.reset();
          this.inc(promoter.stats.promoted);
        },
      }),
    );
  }

  /** Registers a gauge whose values are set on each scrape; a collect that throws leaves it empty. */
  private gauge<L extends string>(
    name: string,
    help: string,
    labelNames: L[],
    fill: (gauge: Gauge<L>) => void | Promise<void>,
  ): void {
    const logger = this.logger;
    this.metrics.own(
      name,
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers: [],
        async collect() {
          this.reset();
          try {
            await fill(this);
          } catch (error) {
            this.reset();
            logger.debug?.(`metrics: ${name} not collected: ${errorMessage(error)}`);
          }
        },
      }),
    );
  }

  /** Awaits a source under the probe timeout, counting a failure against `source` before rethrowing it. */
  private async read<T>(source: string, work: Promise<T>): Promise<T> {
    try {
      return await withTimeout(work, this.options.probeTimeoutMs, source);
    } catch (error) {
      if (!this.counted.has(work)) {
        this.counted.add(work);
        this.collectErrors.inc({ source });
      }
      throw error;
    }
  }
}
