import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';
import { assertInteger } from './option-assertions';

/** The transactional outbox: how its relay claims, retries and prunes rows. Used when `dataSource` is set. */
export interface OutboxOptions {
  /** Whether this process relays the outbox to the broker; a process that leaves it to a relay process sets false. Default: true. */
  relay?: boolean;
  /** Rows one relay claims and publishes per round, from 1 to 1000 (it holds one advisory lock per ordering key in it). Default: 200. */
  batchSize?: number;
  /** Rounds one relay runs at once, each on a pooled connection of its own, from 1 to 8. Default: 2. */
  concurrency?: number;
  /**
   * Rows of one ordering key the relay has awaiting their confirms at once, from 1 to 1000. Above 1 a key's rows of
   * a claim go out back to back on one channel, which the broker keeps in order; a refused one stops its key (see
   * docs/outbox-and-inbox.md). 1 sends each only after the previous one's confirm: slower, but a queue that
   * refuses one message (a full queue with reject-publish) and takes the next can then never reorder a key.
   * Default: 1000 (every row of the key in the claim).
   */
  inFlightPerKey?: number;
  /** How often the relay looks for rows when no commit notification woke it: the fallback. Default: 1000 ms. */
  pollIntervalMs?: number;
  /** How long published rows are kept before they are deleted; 0 deletes them at the next prune. Default: 3600000 ms (1 h). */
  retentionMs?: number;
  /** How often published rows past their retention are deleted, in batches. Default: 60000 ms. */
  pruneIntervalMs?: number;
  /** Backoff (full jitter) before a row whose publish failed is tried again: first ceiling and cap. Defaults: 1000 ms and 60000 ms. */
  retryDelay?: { initialMs?: number; maxMs?: number };
}

/** Outbox options with every default applied and checked. */
export interface ResolvedOutboxOptions {
  relay: boolean;
  batchSize: number;
  concurrency: number;
  inFlightPerKey: number;
  pollIntervalMs: number;
  retentionMs: number;
  pruneIntervalMs: number;
  retryDelay: { initialMs: number; maxMs: number };
}

const OUTBOX_OPTION_KEYS = optionKeys<OutboxOptions>({
  relay: true,
  batchSize: true,
  concurrency: true,
  inFlightPerKey: true,
  pollIntervalMs: true,
  retentionMs: true,
  pruneIntervalMs: true,
  retryDelay: true,
});
const OUTBOX_RETRY_DELAY_KEYS = optionKeys<NonNullable<OutboxOptions['retryDelay']>>({
  initialMs: true,
  maxMs: true,
});

export const DEFAULT_OUTBOX_BATCH_SIZE = 200;
export const DEFAULT_OUTBOX_CONCURRENCY = 2;
export const DEFAULT_OUTBOX_IN_FLIGHT_PER_KEY = 1000;
export const DEFAULT_OUTBOX_POLL_INTERVAL_MS = 1000;
export const DEFAULT_OUTBOX_RETENTION_MS = 60 * 60 * 1000;
export const DEFAULT_OUTBOX_PRUNE_INTERVAL_MS = 60_000;
export const DEFAULT_OUTBOX_RETRY_INITIAL_MS = 1000;
export const DEFAULT_OUTBOX_RETRY_MAX_MS = 60_000;

/** Applies the outbox defaults and checks every value, failing with a message that says how to fix it. */
export function resolveOutboxOptions(options: OutboxOptions | undefined): ResolvedOutboxOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'outbox' must be an object like { batchSize: 200 }",
    );
  }
  const own = options ?? {};
  assertKnownKeys(own, OUTBOX_OPTION_KEYS, 'ReliableMessagingModule', 'outbox.');
  if (own.retryDelay !== undefined) {
    if (typeof own.retryDelay !== 'object' || own.retryDelay === null) {
      throw new ConfigurationError(
        "ReliableMessagingModule: 'outbox.retryDelay' must be an object like { initialMs: 1000, maxMs: 60000 }",
      );
    }
    assertKnownKeys(own.retryDelay, OUTBOX_RETRY_DELAY_KEYS, 'ReliableMessagingModule', 'outbox.retryDelay.');
  }
  const initialMs = own.retryDelay?.initialMs ?? DEFAULT_OUTBOX_RETRY_INITIAL_MS;
  const resolved: ResolvedOutboxOptions = {
    relay: own.relay ?? true,
    batchSize: own.batchSize ?? DEFAULT_OUTBOX_BATCH_SIZE,
    concurrency: own.concurrency ?? DEFAULT_OUTBOX_CONCURRENCY,
    inFlightPerKey: own.inFlightPerKey ?? DEFAULT_OUTBOX_IN_FLIGHT_PER_KEY,
    pollIntervalMs: own.pollIntervalMs ?? DEFAULT_OUTBOX_POLL_INTERVAL_MS,
    retentionMs: own.retentionMs ?? DEFAULT_OUTBOX_RETENTION_MS,
    pruneIntervalMs: own.pruneIntervalMs ?? DEFAULT_OUTBOX_PRUNE_INTERVAL_MS,
    retryDelay: {
      initialMs,
      maxMs: own.retryDelay?.maxMs ?? Math.max(DEFAULT_OUTBOX_RETRY_MAX_MS, initialMs),
    },
  };
  if (typeof resolved.relay !== 'boolean') {
    throw new ConfigurationError(
      `ReliableMessagingModule: 'outbox.relay' must be true or false, got ${String(resolved.relay)}`,
    );
  }
  assertInteger('outbox.batchSize', resolved.batchSize, 1, 1000);
  assertInteger('outbox.concurrency', resolved.concurrency, 1, 8);
  assertInteger('outbox.inFlightPerKey', resolved.inFlightPerKey, 1, 1000);
  assertInteger('outbox.pollIntervalMs', resolved.pollIntervalMs, 10, 3_600_000);
  assertInteger('outbox.retentionMs', resolved.retentionMs, 0, 365 * 24 * 3_600_000);
  assertInteger('outbox.pruneIntervalMs', resolved.pruneIntervalMs, 1000, 24 * 3_600_000);
  assertInteger('outbox.retryDelay.initialMs', resolved.retryDelay.initialMs, 1, 3_600_000);
  assertInteger(
    'outbox.retryDelay.maxMs',
    resolved.retryDelay.maxMs,
    resolved.retryDelay.initialMs,
    24 * 3_600_000,
  );
  return resolved;
}
