import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import type { ConsumerConnection } from '../amqp/consumer-connection.service';
import type { PublisherConnection } from '../amqp/publisher-connection.service';
import type { ConsumerRegistry } from '../consuming/consumer-registry.service';
import type { DeadLetterMonitor } from '../dead-letter/dead-letter-monitor.service';
import type { DatabaseAvailability } from '../database/database-availability.service';
import { OverdueHandlers } from '../flow-control/overdue-handlers.service';
import type { InboxStats } from '../inbox/inbox-stats.service';
import type { OutboxMonitor } from '../outbox/outbox-monitor.service';
import type { OutboxRelay } from '../outbox/outbox-relay.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { MessagingMetrics } from './messaging-metrics.service';
import type { ClaimCheckPruner } from '../claim-check/claim-check-pruner.service';
import type { ScheduledMessages } from '../scheduling/scheduled-messages.service';
import type { ScheduledPromoter } from '../scheduling/scheduled-promoter.service';
import { ageLimitSeconds, MetricsCollector } from './metrics-collector.service';
import type { QueueDepth, QueueDepthMonitor } from './queue-depth.monitor';
import type { IntakeStrategy } from '../intake/consumer-intake';
import { orderedIntake } from '../intake/ordered-intake';
import { unorderedIntake } from '../intake/unordered-intake';

const never = <T>() => new Promise<T>(() => undefined);

/** A collector over sources the test controls: each returns what the test set, or never answers. */
function collectorWith(sources: { queues: () => Promise<QueueDepth[]> }) {
  const registry = new Registry();
  const options = { metricsRegistry: registry, probeTimeoutMs: 100 } as ResolvedMessagingOptions;
  const metrics = new MessagingMetrics(options);
  const consumers = [{ name: 'Billing.on', queue: 'billing', concurrency: 4, messageTypes: [] }];
  const collector = new MetricsCollector(
    options,
    metrics,
    { role: 'consume', isConnected: true, isBlocked: false } as ConsumerConnection,
    { role: 'publish', isConnected: true, isBlocked: true } as PublisherConnection,
    {
      consumers,
      statuses: [{ queue: 'billing', consuming: true, inFlight: 2 }],
    } as unknown as ConsumerRegistry,
    { snapshot: sources.queues } as QueueDepthMonitor,
    new OverdueHandlers(),
    {} as OutboxMonitor,
    {} as OutboxRelay,
    { onDuplicate: () => () => undefined } as unknown as InboxStats,
    { snapshot: () => Promise.resolve([]) } as unknown as DeadLetterMonitor,
    { isAvailable: true } as DatabaseAvailability,
    { enabled: false } as ClaimCheckPruner,
    {} as ScheduledMessages,
    { stats: { promoted: 0 } } as ScheduledPromoter,
  );
  collector.onModuleInit();
  const value = async (name: string) => (await registry.getSingleMetric(name)!.get()).values;
  return { registry, value };
}

describe('MetricsCollector', () => {
  it('reads queue gauges from the monitor on each scrape', async () => {
    let depth = 7;
    const { value } = collectorWith({
      queues: async () => [{ queue: 'billing', ready: depth, consumers: 2 }],
    });

    expect((await value('rm_queue_depth')).map((sample) => sample.value)).toEqual([7]);
    depth = 3;
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await value('rm_queue_depth')).map((sample) => sample.value)).toEqual([3]);
    expect(await value('rm_consumer_in_flight')).toEqual([{ value: 2, labels: { queue: 'billing' } }]);
  });

  it('leaves a gauge empty, never stale, and counts one error per reading when its source does not answer in probeTimeoutMs', async () => {
    // One reading that never answers, shared by every gauge, as QueueDepthMonitor shares its readings.
    const reading = never<QueueDepth[]>();
    const { registry, value } = collectorWith({ queues: () => reading });
    const started = Date.now();

    const exposition = await registry.metrics();

    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await value('rm_queue_depth')).toEqual([]);
    expect(await value('rm_queue_consumers')).toEqual([]);
    expect(exposition).toContain('rm_broker_connected{connection="consume"} 1');
    expect(exposition).toContain('rm_broker_blocked{connection="publish"} 1');
    expect(await value('rm_metrics_collect_errors_total')).toEqual([
      { value: 1, labels: { source: 'queues' } },
    ]);
  });
});

describe('ageLimitSeconds', () => {
  const consumer = (intake: IntakeStrategy) =>
    ({
      deadline: { deadlineMs: 2_000, limitMs: 1_500_000 },
      retry: { options: { maxDelayMs: 1_000, maxAttempts: 4 } },
      intake,
    }) as unknown as Parameters<typeof ageLimitSeconds>[0];

  it('allows one attempt past its deadline, then the longest backoff', () => {
    expect(ageLimitSeconds(consumer(unorderedIntake))).toBe(3);
  });

  it('allows an ordered consumer, which retries in place holding the message, that for every attempt', () => {
    expect(ageLimitSeconds(consumer(orderedIntake))).toBe(12);
  });
});
