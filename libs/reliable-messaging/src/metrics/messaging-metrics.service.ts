import { Inject, Injectable } from '@nestjs/common';
import { Counter, Histogram, register, type Metric, type Registry } from 'prom-client';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { messageTypeLabeller } from './message-type-label';
import { registerReplacing, unregisterOwn } from './register-metric';

type QueueTypeLabels = 'queue' | 'type';

/** Handler durations from 5 ms to 5 minutes. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Consumer lag from 10 ms to a day. */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400];
/** Broker confirm latency from 1 ms to 10 s. */
const CONFIRM_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The metric counting messages a handler discarded as older than the state it holds (VersionGuard). */
export const STALE_MESSAGES_METRIC = 'rm_stale_messages_discarded_total';

/**
 * The module's counters and histograms, on the registry given as `metricsRegistry` (default: prom-client's
 * global registry). Pipeline stages, the failure handler, the inbox and the publisher feed them; gauges that
 * are read on scrape live in MetricsCollector. Every name starts with `rm_`; labels are bounded (queue names
 * come from the code, message types from each consumer's declared types).
 */
@Injectable()
export class MessagingMetrics {
  /** The registry the module's metrics are on. */
  readonly registry: Registry;
  /** Handler runs that succeeded and were acknowledged. */
  readonly consumed: Counter<QueueTypeLabels>;
  /** Handler runs that failed (the message is then retried or dead-lettered). */
  readonly failed: Counter<QueueTypeLabels>;
  /** Failed messages scheduled for another attempt. */
  readonly retried: Counter<QueueTypeLabels>;
  /** Messages moved to their dead-letter queue, by reason. */
  readonly deadLettered: Counter<QueueTypeLabels | 'reason'>;
  /** Deliveries skipped because the inbox had already handled their idempotency key. */
  readonly deduplicated: Counter<QueueTypeLabels>;
  /** Handler runs that passed their deadline. */
  readonly deadlineExceeded: Counter<'queue'>;
  /** Saga step runs that lost the race for their instance to another step (each then ran again, or failed). */
  readonly sagaConflicts: Counter<'queue'>;
  /** Time from a delivery entering the pipeline to its handler finishing, by outcome. */
  readonly handlerDuration: Histogram<QueueTypeLabels | 'outcome'>;
  /** Now minus the message's `occurredAt`, when its handler finishes. */
  readonly consumerLag: Histogram<QueueTypeLabels>;
  /** Messages a handler discarded through VersionGuard as not newer than the state it holds. */
  readonly staleDiscarded: Counter<QueueTypeLabels>;
  /** Time from a publish to the broker's confirm, by outcome (`confirmed` or the error class). */
  readonly publishConfirmDuration: Histogram<'exchange' | 'outcome'>;
  /** Rows the pruners deleted, by what they prune (`inbox`, `outbox`, `idempotency_keys`, `claim_check`). */
  readonly prunedRows: Counter<'kind'>;
  /** Scheduled messages sent into the broker's delay levels (no outbox), confirmed. */
  readonly scheduledDelayed: Counter<never>;
  /**
   * Scheduled messages the republisher took out of the delay levels, by outcome: `delivered`, `waiting` (back
   * into the levels, not yet due) or `dead-lettered`.
   */
  readonly scheduledRepublished: Counter<'outcome'>;
  /** How late the republisher sent a scheduled message to its destination: now minus its due time. */
  readonly scheduledLateness: Histogram<never>;

  private readonly owned: Array<[string, Metric]> = [];
  private readonly labellers = new Map<string, (type: unknown) => string>();

  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) options: ResolvedMessagingOptions) {
    this.registry = options.metricsRegistry ?? register;
    this.consumed = this.counter(
      'rm_messages_consumed_total',
      'Messages handled successfully and acknowledged.',
      ['queue', 'type'],
    );
    this.failed = this.counter('rm_messages_failed_total', 'Handler attempts that failed.', [
      'queue',
      'type',
    ]);
    this.retried = this.counter(
      'rm_messages_retried_total',
      'Failed messages scheduled for another attempt.',
      ['queue', 'type'],
    );
    this.deadLettered = this.counter(
      'rm_messages_dead_lettered_total',
      'Messages moved to their dead-letter queue.',
      ['queue', 'type', 'reason'],
    );
    this.deduplicated = this.counter(
      'rm_messages_deduplicated_total',
      'Duplicate deliveries skipped by the inbox.',
      ['queue', 'type'],
    );
    this.deadlineExceeded = this.counter(
      'rm_handler_deadline_exceeded_total',
      'Handler runs that passed their deadline.',
      ['queue'],
    );
    this.sagaConflicts = this.counter(
      'rm_saga_conflicts_total',
      'Saga step runs that lost the race for their instance to another step.',
      ['queue'],
    );
    this.handlerDuration = this.histogram(
      'rm_handler_duration_seconds',
      'Time from a delivery entering the pipeline to its handler finishing.',
      ['queue', 'type', 'outcome'],
      DURATION_BUCKETS,
    );
    this.consumerLag = this.histogram(
      'rm_consumer_lag_seconds',
      "Now minus the message's occurredAt when its handler finishes.",
      ['queue', 'type'],
      LAG_BUCKETS,
    );
    this.staleDiscarded = this.counter(
      STALE_MESSAGES_METRIC,
      'Messages discarded by their handler because the state it holds is as new or newer.',
      ['queue', 'type'],
    );
    this.publishConfirmDuration = this.histogram(
      'rm_publish_confirm_duration_seconds',
      "Time from a publish to the broker's confirm.",
      ['exchange', 'outcome'],
      CONFIRM_BUCKETS,
    );
    this.prunedRows = this.counter(
      'rm_pruned_rows_total',
      'Rows (or claim-check bodies) past their retention that a pruner deleted, by what it prunes; counted per batch, so a long prune shows its progress.',
      ['kind'],
    );
    this.scheduledDelayed = this.counter(
      'rm_scheduled_delayed_total',
      "Scheduled messages sent into the broker's delay levels (no outbox), confirmed by the broker.",
      [],
    );
    this.scheduledRepublished = this.counter(
      'rm_scheduled_republished_total',
      'Scheduled messages the republisher took out of the delay levels, by outcome (delivered, waiting, dead-lettered).',
      ['outcome'],
    );
    this.scheduledLateness = this.histogram(
      'rm_scheduled_lateness_seconds',
      'How late the republisher sent a scheduled message to its destination: now minus its due time.',
      [],
      LAG_BUCKETS,
    );
  }

  /** The `queue` and `type` labels of a delivery, the type bounded to what its consumer declared. */
  labelsOf(delivery: InboundDelivery): { queue: string; type: string } {
    return {
      queue: delivery.consumer.queue,
      type: this.typeLabel(delivery.consumer, delivery.raw.properties.type),
    };
  }

  /** Counts a message scheduled for another attempt. */
  recordRetry(delivery: InboundDelivery): void {
    this.retried.inc(this.labelsOf(delivery));
  }

  /** Counts a message moved to its dead-letter queue. */
  recordDeadLetter(delivery: InboundDelivery, reason: string): void {
    this.deadLettered.inc({ ...this.labelsOf(delivery), reason });
  }

  /** Counts a saga step run that lost the race for its instance. */
  recordSagaConflict(delivery: InboundDelivery): void {
    this.sagaConflicts.inc({ queue: delivery.consumer.queue });
  }

  /** Counts a duplicate delivery the inbox skipped. */
  recordDuplicate(delivery: InboundDelivery): void {
    this.deduplicated.inc(this.labelsOf(delivery));
  }

  /** Removes the module's metrics from the registry; the last step of shutdown, so scrapes during the drain still see them. */
  unregister(): void {
    for (const [name, metric] of this.owned) unregisterOwn(this.registry, name, metric);
  }

  /** Registers a metric this service owns (the collector's gauges too), so it is removed with the module. */
  own<T extends Metric>(name: string, metric: T): T {
    this.owned.push([name, metric]);
    return registerReplacing(this.registry, name, metric);
  }

  /** The `type` label for a message type seen by `consumer`, bounded to the types it declared. */
  typeLabel(consumer: ConsumerPlan, type: unknown): string {
    let labeller = this.labellers.get(consumer.queue);
    if (!labeller) {
      labeller = messageTypeLabeller(consumer.messageTypes);
      this.labellers.set(consumer.queue, labeller);
    }
    return labeller(type);
  }

  private counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return this.own(name, new Counter<L>({ name, help, labelNames, registers: [] }));
  }

  private histogram<L extends string>(
    name: string,
    help: string,
    labelNames: L[],
    buckets: number[],
  ): Histogram<L> {
    return this.own(name, new Histogram<L>({ name, help, labelNames, buckets, registers: [] }));
  }
}
