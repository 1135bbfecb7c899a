import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';
import { assertInteger } from './option-assertions';

/** The inbox that deduplicates deliveries: how long it remembers handled messages. Used when `dataSource` is set. */
export interface InboxOptions {
  /**
   * How long an inbox row is kept, and so how long a redelivered message is still recognised. Must exceed
   * `replayWindowMs`; startup warns when it doesn't. Default: 604800000 ms (7 days).
   */
  retentionMs?: number;
  /**
   * The longest time after its first delivery that a message can arrive again: retries, requeues after an
   * outage, outbox re-sends, dead letters replayed. Default: 259200000 ms (3 days).
   */
  replayWindowMs?: number;
  /** How often inbox rows past their retention are deleted, in batches. Default: 60000 ms. */
  pruneIntervalMs?: number;
  /**
   * Where handled messages are remembered: `'database'`, the inbox table in `dataSource`, in the handler's
   * transaction; or `'memory'`, this process's memory, for tests without a database (ReliableMessagingTestingModule
   * sets it when it has no `dataSource`). `'memory'` turns `dedup` on by default, as a `dataSource` does, and keeps
   * saga instances in memory too (a step's instance lives where its inbox row does); it cannot be combined with a
   * `dataSource`. Default: `'database'`.
   */
  store?: 'database' | 'memory';
}

/** Inbox options with every default applied and checked. */
export interface ResolvedInboxOptions {
  retentionMs: number;
  replayWindowMs: number;
  pruneIntervalMs: number;
  store: 'database' | 'memory';
}

const INBOX_OPTION_KEYS = optionKeys<InboxOptions>({
  retentionMs: true,
  replayWindowMs: true,
  pruneIntervalMs: true,
  store: true,
});

const DAY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_INBOX_RETENTION_MS = 7 * DAY_MS;
export const DEFAULT_INBOX_REPLAY_WINDOW_MS = 3 * DAY_MS;
export const DEFAULT_INBOX_PRUNE_INTERVAL_MS = 60_000;

/** Applies the inbox defaults and checks every value, failing with a message that says how to fix it. */
export function resolveInboxOptions(options: InboxOptions | undefined): ResolvedInboxOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'inbox' must be an object like { retentionMs: 604800000 }",
    );
  }
  if (options !== undefined) assertKnownKeys(options, INBOX_OPTION_KEYS, 'ReliableMessagingModule', 'inbox.');
  const resolved: ResolvedInboxOptions = {
    retentionMs: options?.retentionMs ?? DEFAULT_INBOX_RETENTION_MS,
    replayWindowMs: options?.replayWindowMs ?? DEFAULT_INBOX_REPLAY_WINDOW_MS,
    pruneIntervalMs: options?.pruneIntervalMs ?? DEFAULT_INBOX_PRUNE_INTERVAL_MS,
    store: options?.store ?? 'database',
  };
  if (resolved.store !== 'database' && resolved.store !== 'memory') {
    throw new ConfigurationError(
      `ReliableMessagingModule: 'inbox.store' must be 'database' or 'memory', got ${JSON.stringify(resolved.store)}`,
    );
  }
  assertInteger('inbox.retentionMs', resolved.retentionMs, 1000, 3650 * DAY_MS);
  assertInteger('inbox.replayWindowMs', resolved.replayWindowMs, 0, 3650 * DAY_MS);
  assertInteger('inbox.pruneIntervalMs', resolved.pruneIntervalMs, 1000, DAY_MS);
  return resolved;
}

/** The startup warning when inbox rows may be pruned before a message can arrive again; undefined when they can't. */
export function inboxRetentionWarning(options: ResolvedInboxOptions): string | undefined {
  if (options.retentionMs > options.replayWindowMs) return undefined;
  return (
    `inbox.retentionMs (${options.retentionMs} ms) does not exceed inbox.replayWindowMs (${options.replayWindowMs} ms): ` +
    'a message redelivered or replayed after its inbox row was pruned is handled again. Raise inbox.retentionMs'
  );
}
