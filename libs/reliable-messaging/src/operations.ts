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
/** The queue scheduled messages without an outbox come out of the delay levels into (`<exchange>.scheduled`). */
export { moduleOwnedQueues, republishQueueName } from './scheduling/broker-delay';
/** Ordering's helpers beyond VersionGuard: the comparison it uses, and the metric of discarded stale messages. */
export { compareVersions, isNewerVersion, type Version } from './ordering/version';
export { STALE_MESSAGES_METRIC } from './metrics/messaging-metrics.service';
/**
 * The module's counters and histograms; an app serves them from the registry it gave as `metricsRegistry`
 * (prom-client's global one by default) and needs nothing from here.
 */
export { MessagingMetrics } from './metrics/messaging-metrics.service';
/**
 * Ordering by key on the wire: a key's bucket and the routing key that carries it (what a plain AMQP client adds
 * as `BCC` to reach the right partition), and the names of a key-ordered consumer's exchanges.
 */
export { ORDERING_BUCKETS, bucketRoutingKey, orderingBucket } from './ordering/ordering-bucket';
export { keyExchangeName, unbucketedExchangeName } from './ordering/consumer-ordering';
/** The startup error the broker's state causes (a ConfigurationError). */
export { TopologyMismatchError } from './errors/topology-mismatch.error';
/** How long a graceful shutdown may take unless `shutdownTimeoutMs` says otherwise. */
export { DEFAULT_SHUTDOWN_TIMEOUT_MS } from './options/reliable-messaging.options';

/*
 * What operator tooling built on the module needs beyond the above (nestjs-reliable-messaging-admin uses exactly
 * these): the resolved options, the publisher and stores the module already runs, and the module's own reading
 * of a dead letter. Each is the same instance or function the module itself uses, so a tool never re-implements
 * how a dead letter is read, a message republished or a parked row moved.
 */
/** The injection token of the resolved options (every option with its default applied), and their type. */
export { RESOLVED_MESSAGING_OPTIONS } from './reliable-messaging.constants';
export type { ResolvedMessagingOptions } from './options/reliable-messaging.options';
/** Publishes a ready message (exchange, routing key, body, properties) and resolves once the broker confirms it. */
export { ConfirmPublisher } from './amqp/confirm-publisher';
/** The message shape ConfirmPublisher takes, and its AMQP properties. */
export type { OutboundMessage, OutboundProperties } from './envelope/envelope';
/** The same message again with new headers (body and properties kept), as the module republishes retries and dead letters. */
export { republish } from './envelope/republish';
/** A copy of headers without the broker's x-death bookkeeping, which must never travel on a republished message. */
export { withoutBrokerHeaders } from './envelope/broker-headers';
/** A new time-ordered UUID (version 7), as the module gives message ids. */
export { uuidv7 } from './envelope/uuid-v7';
/** The outbox table's queries; `findParked`, `resumeParked` and `discardParked` act on the rows the relay parked. */
export { OutboxStore, type MovedRow, type StoredParkedRow } from './outbox/outbox-store.service';
/** Whether a text names an outbox row id (1 to the `bigint` maximum), as the admin tools check ids. */
export { isOutboxRowId, MAX_OUTBOX_ROW_ID } from './outbox/outbox-row-id';
/** Reads a claim-checked body back from its store, as consumers do. */
export { ClaimCheckReader } from './claim-check/claim-check-reader.service';
/** The dead letters' own copies of claim-checked bodies; `copyForReplay` gives a replayed message a fresh one. */
export { DeadLetterClaimCheck } from './claim-check/dead-letter-claim-check.service';
/** A dead letter as the module reads it (reason, origin, attempts, error, body), and its readers. */
export { readDeadLetter, bodyText, headerDate, type DeadLetter } from './dead-letter/dead-letter-record';
/** Dead-letter queue names (`<queue>.dlq`), and a broker error about one in words. */
export {
  DEAD_LETTER_QUEUE_SUFFIX,
  consumerQueueOf,
  describeQueueError,
} from './dead-letter/dead-letter-queue';
/** The headers a dead letter gains (reason, error, origin, attempts), beside its original headers and body. */
export { DEAD_LETTER_HEADERS } from './reliable-messaging.constants';
/** The content type of the module's JSON bodies. */
export { JSON_CONTENT_TYPE } from './reliable-messaging.constants';
/** The validation a consumer applies to a body of its message class (class-transformer, class-validator). */
export { payloadValidator } from './pipeline/payload-validator';
/** The depth of each queue the module consumes, and of its dead-letter queue, read from the broker. */
export { QueueDepthMonitor, type QueueDepth } from './metrics/queue-depth.monitor';
/** The message of anything thrown, for logs and reports. */
export { errorMessage } from './util/error-text';
