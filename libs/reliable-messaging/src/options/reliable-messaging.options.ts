import * as amqp from 'amqplib';
import type { ChannelModel } from 'amqplib';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import type { DataSource } from 'typeorm';
import type { Registry } from 'prom-client';
import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';
import { assertInteger, assertName, assertQueueType } from './option-assertions';
import { assertDeadline } from './deadline-limits';
import { assertLaneName } from './lane.options';
import { resolveRetryOptions, type ResolvedRetryOptions, type RetryOptions } from './retry.options';
import { resolveOutboxOptions, type OutboxOptions, type ResolvedOutboxOptions } from './outbox.options';
import { resolveInboxOptions, type InboxOptions, type ResolvedInboxOptions } from './inbox.options';
import {
  resolveClaimCheckOptions,
  type ClaimCheckOptions,
  type DatabaseClaimCheckStore,
  type ResolvedClaimCheckOptions,
} from './claim-check.options';
import { resolveJsonLimits, type JsonLimits } from './json-limits.options';
import {
  resolveSchedulingOptions,
  type ResolvedSchedulingOptions,
  type SchedulingOptions,
} from './scheduling.options';

/** The type of a queue this module declares. Quorum queues are replicated and the default. */
export type QueueType = 'quorum' | 'classic';

/** Options of `ReliableMessagingModule.forRoot()` / `forRootAsync()`. */
export interface ReliableMessagingModuleOptions {
  /** Broker URL, or several for a cluster (tried in turn on reconnect). `amqp://` or `amqps://`. Required. */
  urls: string | string[];
  /** TLS options for `amqps://` URLs (ca, cert, key, passphrase, servername, rejectUnauthorized). Default: none. */
  tls?: Pick<
    TlsConnectionOptions,
    'ca' | 'cert' | 'key' | 'passphrase' | 'servername' | 'rejectUnauthorized'
  >;
  /** Names the app's two broker connections, shown as `<name>:consume` and `<name>:publish` in the management UI. Default: `reliable-messaging`. */
  connectionName?: string;
  /** AMQP heartbeat in seconds; a dead peer is noticed within about twice this. Default: 15. */
  heartbeatSeconds?: number;
  /**
   * Opens a broker connection. Default: amqplib's `connect`. The testing module sets it to run the module on an
   * in-memory broker; an app has no reason to.
   */
  brokerConnector?: BrokerConnector;
  /** The topic exchange events are published to and queues bind to. Default: `events`. */
  exchange?: string;
  /** The direct exchange dead letters are routed through, keyed by source queue. Default: `<exchange>.dead-letter`. */
  deadLetterExchange?: string;
  /** Queue type for consumers that don't choose one. Default: `quorum`. */
  defaultQueueType?: QueueType;
  /** Handlers of one consumer running at once, when the consumer doesn't say. Default: 10. */
  defaultConcurrency?: number;
  /** Unacknowledged deliveries the broker sends a consumer ahead; defaults to its concurrency. */
  defaultPrefetch?: number;
  /**
   * Largest message body accepted on consume and publish, in bytes: what goes on the wire, a claim check's
   * reference message included (its stored body has its own limit, `claimCheck.maxBodyBytes`). Default: 262144 (256 KiB).
   */
  maxPayloadBytes?: number;
  /**
   * The shape a JSON body may have, checked before it is parsed wherever outside JSON arrives: consumed messages,
   * claim-checked fields, replies, edited dead letters. A body that breaks one is dead-lettered at once with a
   * reason naming the limit (`json-too-deep`, `json-duplicate-key`, ...), never retried. Defaults: see
   * {@link JsonLimits} (depth 32, 10 000 elements, 1 000 keys, keys of 256 characters).
   */
  jsonLimits?: Partial<JsonLimits>;
  /** How long a publish waits for the broker's confirm before failing. Default: 10000 ms. */
  publishConfirmTimeoutMs?: number;
  /**
   * Reconnect backoff (full jitter): first delay and cap. The cap bounds how long after the broker accepts
   * connections again the app is back (plus its setup). Defaults: 250 ms and 1500 ms; raise the cap for a fleet
   * of hundreds of processes, whose attempts a recovering broker must also take.
   */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** How long startup waits for the first connection before failing. Default: 30000 ms. */
  startupTimeoutMs?: number;
  /** Written to every message's `app_id`. Default: `connectionName`. */
  appId?: string;
  /** Quorum queues' `x-delivery-limit`, a backstop against crash loops; attempts are counted by the module. Default: 20. */
  deliveryLimitBackstop?: number;
  /**
   * The DataSource (PostgreSQL) that holds the outbox and inbox tables. With it, `publish()` writes to the outbox
   * in the caller's transaction and consumers deduplicate; without it there is no outbox and no dedup, and
   * `publish()` sends at once. Default: none.
   */
  dataSource?: DataSource;
  /** The transactional outbox and its relay (used with `dataSource`). Defaults: see OutboxOptions. */
  outbox?: OutboxOptions;
  /** The inbox that deduplicates deliveries (used with `dataSource`, or in memory for tests). Defaults: see InboxOptions. */
  inbox?: InboxOptions;
  /**
   * The claim check: bodies above a threshold go to a store and the message carries a reference
   * (docs/claim-check.md). Default: no module-wide threshold; classes with `@MessageType({ claimCheck })` use the
   * `dataSource`'s `rm_claim_check` table.
   */
  claimCheck?: ClaimCheckOptions;
  /** Whether to consume at all (a publish-only process, or the relay run on its own, sets false). Default: true. */
  consumersEnabled?: boolean;
  /**
   * Lane names this app publishes to besides those its own `@Consume({ lanes })` declare (a publish-only app
   * names the lanes of the consumers it sends to); publishing to any other lane throws. Default: none.
   */
  lanes?: string[];
  /** Graceful shutdown's deadline: keep it below Kubernetes' terminationGracePeriodSeconds. Default: 25000 ms. */
  shutdownTimeoutMs?: number;
  /**
   * Handler deadline for consumers that don't set `deadlineMs`: keep it above your handlers' p99, and give long
   * jobs their own `deadlineMs` or `ctx.extendDeadline()`. Default: 30000 ms.
   */
  defaultDeadlineMs?: number;
  /**
   * The broker's acknowledgement timeout per consumer, sent as `x-consumer-timeout` on RabbitMQ 3.12+ (older
   * brokers use `consumer_timeout` in rabbitmq.conf). Deadlines and their extensions stay below it. Default: 1800000 ms (30 min).
   */
  consumerTimeoutMs?: number;
  /** The prom-client registry the module's `rm_*` metrics are registered on. Default: prom-client's global `register`. */
  metricsRegistry?: Registry;
  /** How long a health check or a metrics scrape waits for the broker or the database. Default: 3000 ms. */
  probeTimeoutMs?: number;
  /**
   * Whether readiness fails while a broker connection is down or a consumer is not subscribed. Off, the outage
   * shows as `degraded` in the health details (and in the `rm_broker_connected` metric) and the pod keeps taking
   * requests. Default: false with a `dataSource` (`publish()` writes to the outbox, so requests need only
   * PostgreSQL and the relay catches up after the outage), true without one (`publish()` needs the broker). A
   * consumer-only app that wants its pods out of service during a broker outage sets true.
   */
  readinessRequiresBroker?: boolean;
  /** Retries of failed deliveries, for every consumer; `@Consume({ retry })` overrides. Defaults: see RetryOptions (6 attempts from 1 s, capped at 60 s). */
  retry?: RetryOptions;
  /**
   * The JSON-lines file the dead-letter tools append their audit records to when there is no `dataSource`
   * (with one, they go to the `rm_dead_letter_audit` table). Default: `dead-letter-audit.jsonl` in the working directory.
   */
  deadLetterAuditFile?: string;
  /**
   * Scheduled messages without a `dataSource`: opt in to the broker's delay levels (docs/scheduling.md, "Without
   * an outbox"). Defaults: see SchedulingOptions (off; at most 24 h).
   */
  scheduling?: SchedulingOptions;
}

/** Opens a connection to the broker at `url`, as amqplib's `connect(url, socketOptions)` does. */
export type BrokerConnector = (url: string, socketOptions: Record<string, unknown>) => Promise<ChannelModel>;

/** Every option with its default applied, validated once at startup. */
export interface ResolvedMessagingOptions {
  urls: string[];
  brokerConnector: BrokerConnector;
  tls?: ReliableMessagingModuleOptions['tls'];
  connectionName: string;
  heartbeatSeconds: number;
  exchange: string;
  deadLetterExchange: string;
  defaultQueueType: QueueType;
  defaultConcurrency: number;
  defaultPrefetch?: number;
  maxPayloadBytes: number;
  jsonLimits: Readonly<JsonLimits>;
  publishConfirmTimeoutMs: number;
  reconnect: { initialDelayMs: number; maxDelayMs: number };
  startupTimeoutMs: number;
  appId: string;
  deliveryLimitBackstop: number;
  dataSource?: DataSource;
  outbox: ResolvedOutboxOptions;
  inbox: ResolvedInboxOptions;
  claimCheck: ResolvedClaimCheckOptions;
  consumersEnabled: boolean;
  lanes: readonly string[];
  shutdownTimeoutMs: number;
  defaultDeadlineMs: number;
  consumerTimeoutMs: number;
  metricsRegistry?: Registry;
  probeTimeoutMs: number;
  readinessRequiresBroker: boolean;
  retry: ResolvedRetryOptions;
  deadLetterAuditFile?: string;
  scheduling: ResolvedSchedulingOptions;
}

/** Every key of the module's options, for the startup check that refuses a key it does not know. */
const MODULE_OPTION_KEYS = optionKeys<ReliableMessagingModuleOptions>({
  urls: true,
  tls: true,
  connectionName: true,
  heartbeatSeconds: true,
  brokerConnector: true,
  exchange: true,
  deadLetterExchange: true,
  defaultQueueType: true,
  defaultConcurrency: true,
  defaultPrefetch: true,
  maxPayloadBytes: true,
  jsonLimits: true,
  publishConfirmTimeoutMs: true,
  reconnect: true,
  startupTimeoutMs: true,
  appId: true,
  deliveryLimitBackstop: true,
  dataSource: true,
  outbox: true,
  inbox: true,
  claimCheck: true,
  consumersEnabled: true,
  lanes: true,
  shutdownTimeoutMs: true,
  defaultDeadlineMs: true,
  consumerTimeoutMs: true,
  metricsRegistry: true,
  probeTimeoutMs: true,
  readinessRequiresBroker: true,
  retry: true,
  deadLetterAuditFile: true,
  scheduling: true,
});
const RECONNECT_OPTION_KEYS = optionKeys<NonNullable<ReliableMessagingModuleOptions['reconnect']>>({
  initialDelayMs: true,
  maxDelayMs: true,
});

export const DEFAULT_CONNECTION_NAME = 'reliable-messaging';
export const DEFAULT_HEARTBEAT_SECONDS = 15;
export const DEFAULT_EXCHANGE = 'events';
export const DEFAULT_QUEUE_TYPE: QueueType = 'quorum';
export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;
export const DEFAULT_PUBLISH_CONFIRM_TIMEOUT_MS = 10_000;
export const DEFAULT_RECONNECT_INITIAL_DELAY_MS = 250;
export const DEFAULT_RECONNECT_MAX_DELAY_MS = 1_500;
export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000;
export const DEFAULT_DELIVERY_LIMIT_BACKSTOP = 20;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;
export const DEFAULT_DEADLINE_MS = 30_000;
export const DEFAULT_CONSUMER_TIMEOUT_MS = 1_800_000;
export const DEFAULT_PROBE_TIMEOUT_MS = 3_000;

/** What `resolveOptions` builds with that the options themselves do not know. */
export interface OptionDefaults {
  /** Makes the claim check's default store on the module's `dataSource`; without it there is no default store. */
  databaseClaimCheckStore?: DatabaseClaimCheckStore;
}

/** Applies defaults and checks every option, failing with a message that says how to fix it. */
export function resolveOptions(
  options: ReliableMessagingModuleOptions,
  defaults: OptionDefaults = {},
): ResolvedMessagingOptions {
  if (options !== null && typeof options === 'object') {
    assertKnownKeys(options, MODULE_OPTION_KEYS, 'ReliableMessagingModule');
    assertKnownNested(options.reconnect, 'reconnect', RECONNECT_OPTION_KEYS, '{ maxDelayMs: 1500 }');
    // NOTE: `tls` is not checked key by key: it goes to Node's TLS socket as it is, which takes more options
    // (minVersion, pfx, ...) than the six the type names.
  }
  if (!options || options.urls === undefined) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'urls' is required, e.g. forRoot({ urls: process.env.AMQP_URL })",
    );
  }
  const urls = (Array.isArray(options.urls) ? options.urls : [options.urls]).filter((u) => u !== '');
  if (urls.length === 0) {
    throw new ConfigurationError("ReliableMessagingModule: 'urls' is empty; give at least one amqp:// URL");
  }
  for (const url of urls) assertBrokerUrl(url);

  const exchange = options.exchange ?? DEFAULT_EXCHANGE;
  const connectionName = options.connectionName ?? DEFAULT_CONNECTION_NAME;
  const resolved: ResolvedMessagingOptions = {
    urls,
    brokerConnector: options.brokerConnector ?? ((url, socketOptions) => amqp.connect(url, socketOptions)),
    tls: options.tls,
    connectionName,
    heartbeatSeconds: options.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS,
    exchange,
    deadLetterExchange: options.deadLetterExchange ?? `${exchange}.dead-letter`,
    defaultQueueType: options.defaultQueueType ?? DEFAULT_QUEUE_TYPE,
    defaultConcurrency: options.defaultConcurrency ?? DEFAULT_CONCURRENCY,
    defaultPrefetch: options.defaultPrefetch,
    maxPayloadBytes: options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    jsonLimits: resolveJsonLimits(options.jsonLimits),
    publishConfirmTimeoutMs: options.publishConfirmTimeoutMs ?? DEFAULT_PUBLISH_CONFIRM_TIMEOUT_MS,
    reconnect: {
      initialDelayMs: options.reconnect?.initialDelayMs ?? DEFAULT_RECONNECT_INITIAL_DELAY_MS,
      maxDelayMs: options.reconnect?.maxDelayMs ?? DEFAULT_RECONNECT_MAX_DELAY_MS,
    },
    startupTimeoutMs: options.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
    appId: options.appId ?? connectionName,
    deliveryLimitBackstop: options.deliveryLimitBackstop ?? DEFAULT_DELIVERY_LIMIT_BACKSTOP,
    dataSource: options.dataSource,
    outbox: resolveOutboxOptions(options.outbox),
    inbox: resolveInboxOptions(options.inbox),
    claimCheck: resolveClaimCheckOptions(
      options.claimCheck,
      options.dataSource,
      resolveRetryOptions(options.retry),
      defaults.databaseClaimCheckStore,
    ),
    consumersEnabled: options.consumersEnabled ?? true,
    lanes: resolveLaneNames(options.lanes),
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS,
    defaultDeadlineMs: options.defaultDeadlineMs ?? DEFAULT_DEADLINE_MS,
    consumerTimeoutMs: options.consumerTimeoutMs ?? DEFAULT_CONSUMER_TIMEOUT_MS,
    metricsRegistry: options.metricsRegistry,
    probeTimeoutMs: options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS,
    readinessRequiresBroker: options.readinessRequiresBroker ?? options.dataSource === undefined,
    retry: resolveRetryOptions(options.retry),
    deadLetterAuditFile: options.deadLetterAuditFile,
    scheduling: resolveSchedulingOptions(options.scheduling, options.dataSource !== undefined),
  };

  assertName('exchange', resolved.exchange);
  assertName('deadLetterExchange', resolved.deadLetterExchange);
  if (resolved.exchange === resolved.deadLetterExchange) {
    throw new ConfigurationError("ReliableMessagingModule: 'deadLetterExchange' must differ from 'exchange'");
  }
  if (resolved.inbox.store === 'memory' && resolved.dataSource) {
    throw new ConfigurationError(
      "ReliableMessagingModule: inbox.store 'memory' is for tests without a database; with a dataSource the inbox is its table (leave inbox.store out)",
    );
  }
  assertQueueType('defaultQueueType', resolved.defaultQueueType);
  assertInteger('heartbeatSeconds', resolved.heartbeatSeconds, 0, 600);
  assertInteger('defaultConcurrency', resolved.defaultConcurrency, 1, 10_000);
  if (resolved.defaultPrefetch !== undefined)
    assertInteger('defaultPrefetch', resolved.defaultPrefetch, 1, 65_535);
  assertInteger('maxPayloadBytes', resolved.maxPayloadBytes, 1, 128 * 1024 * 1024);
  assertInteger('publishConfirmTimeoutMs', resolved.publishConfirmTimeoutMs, 1, 600_000);
  assertInteger('reconnect.initialDelayMs', resolved.reconnect.initialDelayMs, 1, 600_000);
  assertInteger(
    'reconnect.maxDelayMs',
    resolved.reconnect.maxDelayMs,
    resolved.reconnect.initialDelayMs,
    3_600_000,
  );
  assertInteger('startupTimeoutMs', resolved.startupTimeoutMs, 1, 3_600_000);
  assertInteger('shutdownTimeoutMs', resolved.shutdownTimeoutMs, 0, 3_600_000);
  assertInteger('consumerTimeoutMs', resolved.consumerTimeoutMs, 10_000, 2_147_483_647);
  assertDeadline('defaultDeadlineMs', resolved.defaultDeadlineMs, resolved.consumerTimeoutMs);
  assertInteger('probeTimeoutMs', resolved.probeTimeoutMs, 1, 60_000);
  if (typeof resolved.readinessRequiresBroker !== 'boolean') {
    throw new ConfigurationError(
      `ReliableMessagingModule: 'readinessRequiresBroker' must be true or false, got ${String(resolved.readinessRequiresBroker)}`,
    );
  }
  if (
    resolved.deadLetterAuditFile !== undefined &&
    (typeof resolved.deadLetterAuditFile !== 'string' || resolved.deadLetterAuditFile === '')
  ) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'deadLetterAuditFile' must be a file path, e.g. '/var/log/app/dead-letter-audit.jsonl'",
    );
  }
  assertInteger('deliveryLimitBackstop', resolved.deliveryLimitBackstop, 1, 10_000);
  return resolved;
}

/** Checks a nested option that has no resolver of its own: an object of known keys, or left out. */
function assertKnownNested(value: unknown, name: string, known: readonly string[], example: string): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(`ReliableMessagingModule: '${name}' must be an object like ${example}`);
  }
  assertKnownKeys(value, known, 'ReliableMessagingModule', `${name}.`);
}

function resolveLaneNames(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'lanes' must be an array of lane names, e.g. ['urgent', 'bulk']",
    );
  }
  return value.map((name) => assertLaneName(name, "ReliableMessagingModule: 'lanes'"));
}

function assertBrokerUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigurationError(
      'ReliableMessagingModule: a broker URL is not a valid URL; expected amqp://user:password@host:5672/vhost',
    );
  }
  if (parsed.protocol !== 'amqp:' && parsed.protocol !== 'amqps:') {
    throw new ConfigurationError(
      `ReliableMessagingModule: broker URL scheme '${parsed.protocol}' is not supported; use amqp:// or amqps://`,
    );
  }
}
