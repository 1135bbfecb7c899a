import type { MessageMiddleware } from '../pipeline/message-middleware';
import { HandlerDeadlineExceededError } from '../errors/handler-deadline-exceeded.error';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessagingMetrics } from './messaging-metrics.service';

interface LabelSet {
  labels: { queue: string; type: string };
  success: { queue: string; type: string; outcome: 'success' };
  failure: { queue: string; type: string; outcome: 'failure' };
}

/**
 * Measures every delivery: how long its handling took and how it ended (`rm_handler_duration_seconds`,
 * `rm_messages_consumed_total` or `rm_messages_failed_total`), and how far behind the source it was handled
 * (`rm_consumer_lag_seconds`, from the envelope's `occurredAt`). Errors pass through unchanged.
 */
export function metricsMiddleware(metrics: MessagingMetrics): MessageMiddleware {
  // The label objects of each (queue, bounded type) pair, made once: prom-client only reads them.
  const labelSets = new Map<string, LabelSet>();
  const labelSetOf = (delivery: InboundDelivery): LabelSet => {
    const labels = metrics.labelsOf(delivery);
    const key = `${labels.queue}\u0000${labels.type}`;
    let set = labelSets.get(key);
    if (!set) {
      set = {
        labels,
        success: { ...labels, outcome: 'success' },
        failure: { ...labels, outcome: 'failure' },
      };
      labelSets.set(key, set);
    }
    return set;
  };
  return (next) => async (delivery) => {
    const started = performance.now();
    let outcome: 'success' | 'failure' = 'success';
    try {
      await next(delivery);
    } catch (error) {
      outcome = 'failure';
      if (error instanceof HandlerDeadlineExceededError)
        metrics.deadlineExceeded.inc({ queue: delivery.consumer.queue });
      throw error;
    } finally {
      const set = labelSetOf(delivery);
      const labels = set.labels;
      metrics.handlerDuration.observe(set[outcome], (performance.now() - started) / 1000);
      (outcome === 'success' ? metrics.consumed : metrics.failed).inc(labels);
      const occurredAt = delivery.envelope?.occurredAt.getTime();
      if (occurredAt !== undefined && Number.isFinite(occurredAt)) {
        metrics.consumerLag.observe(labels, Math.max(0, Date.now() - occurredAt) / 1000);
      }
    }
  };
}
