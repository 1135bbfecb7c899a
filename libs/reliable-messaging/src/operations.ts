/**
 * What operators' scripts, dashboards and harnesses reach beyond an application's own code, imported as
 * `nestjs-reliable-messaging/operations`: the monitors and stats behind the health checks and metrics, the consumers
 * and connections at run time, the pruners on demand, and the names of the broker objects the module declares.
 */

/** The outbox's backlog and parked rows, and what the relay has done. */
export { OutboxMonitor } from './outbox/outbox-monitor.service';
export type { OutboxBacklog, ParkedRow } from './outbox/outbox-store.service';
export { OutboxRelay, type OutboxRelayStats } from './outbox/outbox-relay.service';
/** Duplicates the inbox caught, per consumer. */
export { InboxStats, type DuplicateDelivery } from './inbox/inbox-stats.service';
/** Each dead-letter queue's depth and the age of its oldest dead letter. */
export { DeadLetterMonitor, type DeadLetterQueueStats } from './dead-letter/dead-letter-monitor.service';

/** The consumers at run time (queue, state, in flight), and the lifecycle that starts and drains them. */
export { ConsumerRegistry } from './consuming/consumer-registry.service';
export type { ConsumerStatus } from './consuming/consumer-runner';
export { MessagingLifecycle } from './lifecycle/messaging-lifecycle';
/** The two broker connections (consumers apart from publishers), and what they report. */
export { ConsumerConnection } from './amqp/consumer-connection.service';
export { PublisherConnection } from './amqp/publisher-connection.service';
export type { AmqpConnection, ConnectionRole, ConnectionState } from './amqp/amqp-connection.service';

/** Deletes expired inbox rows, or published outbox rows, now rather than at the next interval. */
export { InboxPruner } from './inbox/inbox-pruner.service';
export { OutboxPruner } from './outbox/outbox-pruner.service';

/** The retry topology's names for an exchange, and the granularity of its delays. */
export { delayLevelNames, deliverExchangeName, DELAY_RESOLUTION_MS } from './retry/delay-levels';
/** Ordering's helpers beyond VersionGuard: the comparison it uses, and the metric of discarded stale messages. */
export { compareVersions, isNewerVersion, type Version } from './ordering/version';
export { STALE_MESSAGES_METRIC } from './metrics/messaging-metrics.service';
/**
 * The module's counters and histograms; an app serves them from the registry it gave as `metricsRegistry`
 * (prom-client's global one by default) and needs nothing from here.
 */
export { MessagingMetrics } from './metrics/messaging-metrics.service';
/** The startup errors the broker's state causes (both are ConfigurationErrors). */
export { TopologyMismatchError } from './errors/topology-mismatch.error';
export { ConsistentHashExchangeMissingError } from './errors/consistent-hash-exchange-missing.error';
/** How long a graceful shutdown may take unless `shutdownTimeoutMs` says otherwise. */
export { DEFAULT_SHUTDOWN_TIMEOUT_MS } from './options/reliable-messaging.options';
