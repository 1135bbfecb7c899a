import type { DataSource, EntityManager } from 'typeorm';
import { ConfigurationError } from '../errors/configuration.error';
import { assertKnownKeys, optionKeys } from './known-keys';
import { assertInteger } from './option-assertions';
import type { ResolvedRetryOptions } from './retry.options';

/** What a store keeps beside a body: when it may be deleted, and what it belongs to (for operators). */
export interface ClaimCheckBodyInfo {
  /** The body's own id, a UUID v7 (its creation time is in it). */
  id: string;
  /** The body may be deleted from this instant on. */
  expiresAt: Date;
  /** The message type, for operators browsing the store. */
  messageType: string;
}

/** The size of a store, as the metrics show it. */
export interface ClaimCheckStoreStats {
  bodies: number;
  bytes: number;
  /** When the oldest body still stored was written; undefined when the store is empty. */
  oldestAt?: Date;
}

/**
 * Where claim-checked bodies live. A store hands out references it alone can read back: `locate()` accepts only
 * the references it would write itself (its own scheme, bucket or directory, a well-formed id), so a forged
 * reference never reaches the store. `put()` and `get()` throw ClaimCheckStoreUnavailableError when the store
 * cannot be reached; `get()` resolves undefined for a body that is not there, and throws InvalidMessageError for
 * one it refuses.
 */
export interface ClaimCheckStore {
  /** Names the store in logs and metrics: `postgres`, `filesystem`, `s3`. */
  readonly kind: string;
  /** The reference written to the message's `rm-claim-check` header for a body. */
  referenceFor(info: ClaimCheckBodyInfo): string;
  /** The body's location parsed from a reference, or undefined when the reference is not this store's. */
  locate(reference: string): string | undefined;
  /** Stores a body; `manager` is the outbox's transaction, used by stores that can join it. */
  put(location: string, body: Buffer, info: ClaimCheckBodyInfo, manager?: EntityManager): Promise<void>;
  /**
   * Reads a body. `expectedBytes` is the size the message declares, already within `claimCheck.maxBodyBytes`;
   * the module always gives it. A store should compare the stored size with it before reading (a file's `fstat`,
   * an object's `Content-Length`, a column's `octet_length`), read no more than one byte beyond it, and refuse a
   * body of another size, or one it cannot serve, by throwing InvalidMessageError (`claim-check-corrupt`,
   * `claim-check-unreadable`): the message is dead-lettered at once. A store that ignores it still works; the
   * module checks the size and SHA-256 of what it returns. Without it, the whole body is read.
   */
  get(location: string, expectedBytes?: number): Promise<Buffer | undefined>;
  /** Deletes a body; nothing happens when it is not there. */
  delete(location: string): Promise<void>;
  /**
   * Deletes up to `limit` bodies whose time to live has passed, except those whose location (`locate()`) is in
   * `keep`: expired bodies a dead letter still refers to. Resolves with how many went; fewer than `limit` once
   * none is left. The pruner passes the same `keep` set to every batch of a round, so a store may resume each
   * batch where the round's previous one stopped.
   */
  deleteExpired(limit: number, now?: Date, keep?: ReadonlySet<string>): Promise<number>;
  stats(): Promise<ClaimCheckStoreStats>;
}

/** The claim check: large bodies kept in a store, the message carrying a reference (docs/claim-check.md). */
export interface ClaimCheckOptions {
  /**
   * Where bodies go: `new FilesystemClaimCheckStore(dir)`, `new S3ClaimCheckStore({ client, bucket })`, or your
   * own `ClaimCheckStore`. Default: the `rm_claim_check` table of the module's `dataSource`; without a
   * `dataSource` a store is required.
   */
  store?: ClaimCheckStore;
  /**
   * Every message whose JSON body is larger than this many bytes goes through the claim check, whatever its
   * class says. Default: none (only classes with `@MessageType({ claimCheck })` do).
   */
  thresholdBytes?: number;
  /** The largest body a claim check may hold, checked on publish and on consume. Default: 67108864 (64 MiB). */
  maxBodyBytes?: number;
  /**
   * How long a body is kept after its message was published. It must cover the message's time in the queue and
   * every retry: at least the retry schedule (`retry.maxAttempts` × `retry.maxDelayMs`, and each consumer's own).
   * A dead letter gets its own copy (`deadLetterTimeToLiveMs`). Default: 1209600000 ms (14 days).
   */
  timeToLiveMs?: number;
  /**
   * How long a dead letter's own copy of its body is kept: when the module dead-letters a claim-checked message
   * it stores the body again under a new reference for the dead letter alone, so a replay months later still
   * finds it; purging the dead letter deletes the copy. Set it above your dead-letter retention.
   * Default: 31536000000 ms (365 days).
   */
  deadLetterTimeToLiveMs?: number;
  /** How often expired bodies are deleted, in batches of 1000. Default: 300000 ms (5 min). */
  pruneIntervalMs?: number;
}

/** How a message class uses the claim check, in `@MessageType({ claimCheck })`. */
export interface MessageClaimCheck {
  /** Bodies (or the field) larger than this many bytes go through the claim check; 0 sends every one through it. */
  thresholdBytes: number;
  /** Offload only this property (a note, an attachment); the rest of the message stays on the wire. Default: the whole body. */
  field?: string;
}

/** Claim-check options with every default applied; `store` is undefined when the module has none. */
export interface ResolvedClaimCheckOptions {
  /** Whether the module's own options set `claimCheck`; message classes may turn it on besides. */
  configured: boolean;
  store?: ClaimCheckStore;
  thresholdBytes?: number;
  maxBodyBytes: number;
  timeToLiveMs: number;
  deadLetterTimeToLiveMs: number;
  pruneIntervalMs: number;
}

const CLAIM_CHECK_OPTION_KEYS = optionKeys<ClaimCheckOptions>({
  store: true,
  thresholdBytes: true,
  maxBodyBytes: true,
  timeToLiveMs: true,
  deadLetterTimeToLiveMs: true,
  pruneIntervalMs: true,
});

export const DEFAULT_CLAIM_CHECK_MAX_BODY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_CLAIM_CHECK_TIME_TO_LIVE_MS = 14 * 24 * 3_600_000;
export const DEFAULT_CLAIM_CHECK_DEAD_LETTER_TIME_TO_LIVE_MS = 365 * 24 * 3_600_000;
export const DEFAULT_CLAIM_CHECK_PRUNE_INTERVAL_MS = 300_000;

/**
 * Makes the default store, the `rm_claim_check` table of the module's `dataSource`. The module passes
 * PostgresClaimCheckStore's constructor; the options know no store of their own.
 */
export type DatabaseClaimCheckStore = (dataSource: DataSource) => ClaimCheckStore;

/**
 * Applies the claim check's defaults and checks them, failing with a message that says how to fix it. Without a
 * `store`, a module with a `dataSource` gets `databaseStore(dataSource)`.
 */
export function resolveClaimCheckOptions(
  options: ClaimCheckOptions | undefined,
  dataSource: DataSource | undefined,
  retry: Pick<ResolvedRetryOptions, 'maxAttempts' | 'maxDelayMs'>,
  databaseStore?: DatabaseClaimCheckStore,
): ResolvedClaimCheckOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'claimCheck' must be an object like { thresholdBytes: 65536 }",
    );
  }
  const own = options ?? {};
  assertKnownKeys(own, CLAIM_CHECK_OPTION_KEYS, 'ReliableMessagingModule', 'claimCheck.');
  const resolved: ResolvedClaimCheckOptions = {
    configured: options !== undefined,
    store: own.store ?? (dataSource && databaseStore ? databaseStore(dataSource) : undefined),
    thresholdBytes: own.thresholdBytes,
    maxBodyBytes: own.maxBodyBytes ?? DEFAULT_CLAIM_CHECK_MAX_BODY_BYTES,
    timeToLiveMs: own.timeToLiveMs ?? DEFAULT_CLAIM_CHECK_TIME_TO_LIVE_MS,
    deadLetterTimeToLiveMs: own.deadLetterTimeToLiveMs ?? DEFAULT_CLAIM_CHECK_DEAD_LETTER_TIME_TO_LIVE_MS,
    pruneIntervalMs: own.pruneIntervalMs ?? DEFAULT_CLAIM_CHECK_PRUNE_INTERVAL_MS,
  };
  if (options !== undefined && !resolved.store) {
    throw new ConfigurationError(
      "ReliableMessagingModule: 'claimCheck' needs a store without a dataSource: set claimCheck.store to " +
        'new FilesystemClaimCheckStore(dir) or new S3ClaimCheckStore({ client, bucket })',
    );
  }
  if (resolved.thresholdBytes !== undefined)
    assertInteger('claimCheck.thresholdBytes', resolved.thresholdBytes, 0, 128 * 1024 * 1024);
  assertInteger('claimCheck.maxBodyBytes', resolved.maxBodyBytes, 1, 2 * 1024 * 1024 * 1024 - 1);
  assertInteger('claimCheck.timeToLiveMs', resolved.timeToLiveMs, 1000, 10 * 365 * 24 * 3_600_000);
  assertInteger(
    'claimCheck.deadLetterTimeToLiveMs',
    resolved.deadLetterTimeToLiveMs,
    1000,
    10 * 365 * 24 * 3_600_000,
  );
  assertInteger('claimCheck.pruneIntervalMs', resolved.pruneIntervalMs, 1000, 24 * 3_600_000);
  // Checked where the app turns the claim check on itself: an app that only reads claim-checked messages, or none,
  // is not held to it.
  const retrying = retry.maxAttempts * retry.maxDelayMs;
  if (resolved.configured && resolved.timeToLiveMs < retrying) {
    throw new ConfigurationError(
      `ReliableMessagingModule: 'claimCheck.timeToLiveMs' (${resolved.timeToLiveMs} ms) is shorter than the retry ` +
        `schedule (retry.maxAttempts × retry.maxDelayMs = ${retrying} ms): a retried message would lose its body. ` +
        'Raise it to cover retries and the time a dead letter waits to be replayed',
    );
  }
  return resolved;
}
