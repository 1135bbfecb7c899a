import { callNext, type MessageMiddleware } from '../pipeline/message-middleware';
import { HandlerDeadlineExceededError } from '../errors/handler-deadline-exceeded.error';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { HEADERS } from '../reliable-messaging.constants';
import { OTHER_TYPE } from './message-type-label';

interface LabelSet {
  labels: { queue: string; type: string };
  success: { queue: string; type: string; outcome: 'success' };
  failure: { queue: string; type: string; outcome: 'failure' };
}

/**
 * Measures every delivery: how long its handling took and how it ended (`rm_handler_duration_seconds`,
 * `rm_messages_consumed_total` or `rm_messages_failed_total`), and how far behind the source it was handled
 * (`rm_consumer_lag_seconds`, from the envelope's `occurredAt`, or for a scheduled message from when it was due).
 * Errors pass through unchanged.
 */
export function metricsStage(
  _plan: unknown,
  { metrics }: Pick<StageDependencies, 'metrics'>,
): MessageMiddleware {
  // The label objects of each message type the consumer labels as itself, made once: prom-client only reads
  // them. Keyed by the delivery's `type` property; every other type shares the `other` set, so a forged type
  // never grows the map.
  const labelSets = new Map<unknown, LabelSet>();
  let otherSet: LabelSet | undefined;
  const labelSetOf = (delivery: InboundDelivery): LabelSet => {
    const type: unknown = delivery.raw.properties.type;
    const known = labelSets.get(type);
    if (known) return known;
    const labels = metrics.labelsOf(delivery);
    if (labels.type === OTHER_TYPE && otherSet) return otherSet;
    const set: LabelSet = {
      labels,
      success: { ...labels, outcome: 'success' },
      failure: { ...labels, outcome: 'failure' },
    };
    if (labels.type === OTHER_TYPE) otherSet = set;
    else labelSets.set(type, set);
    return set;
  };
  const record = (delivery: InboundDelivery, started: number, outcome: 'success' | 'failure'): void => {
    const set = labelSetOf(delivery);
    const labels = set.labels;
    metrics.handlerDuration.observe(set[outcome], (performance.now() - started) / 1000);
    (outcome === 'success' ? metrics.consumed : metrics.failed).inc(labels);
    const occurredAt = delivery.envelope?.occurredAt.getTime();
    if (occurredAt !== undefined && Number.isFinite(occurredAt)) {
      const since = Math.max(occurredAt, scheduledFor(delivery));
      metrics.consumerLag.observe(labels, Math.max(0, Date.now() - since) / 1000);
    }
  };
  return (next) => (delivery) => {
    const started = performance.now();
    return callNext(next, delivery).then(
      () => record(delivery, started, 'success'),
      (error: unknown) => {
        if (error instanceof HandlerDeadlineExceededError)
          metrics.deadlineExceeded.inc({ queue: delivery.consumer.queue });
        record(delivery, started, 'failure');
        throw error;
      },
    );
  };
}

/**
 * When a scheduled message was due (its `rm-scheduled-for` header), in epoch ms; -Infinity for any other message.
 * A header is a claim: a forged one can only make this message's lag look smaller, never hold anything up.
 */
function scheduledFor(delivery: InboundDelivery): number {
  const header: unknown = delivery.raw.properties.headers?.[HEADERS.scheduledFor];
  const at = typeof header === 'string' && header.length <= 40 ? Date.parse(header) : Number.NaN;
  return Number.isFinite(at) ? at : Number.NEGATIVE_INFINITY;
}
