import { ConfigurationError } from '../errors/configuration.error';
import { assertInteger } from '../options/option-assertions';
import { defaultIdentifyCaller, type IdentifyCaller } from './caller-identity';

/** Options of `IdempotencyModule.forRoot()` / `forRootAsync()`: how long keys are kept and how duplicates wait. */
export interface IdempotencyModuleOptions {
  /**
   * How long a key is remembered after the transaction of the request that used it began. A retry within it gets the stored
   * response; after it the key is forgotten and the request runs again. Default: 86400000 ms (24 hours).
   */
  ttlMs?: number;
  /**
   * How long a request waits for another one with the same key still in flight (its transaction holds the key's
   * row) before it gets 409 Conflict. Default: 10000 ms.
   */
  lockTimeoutMs?: number;
  /** How often expired keys are deleted, in batches. Default: 60000 ms. */
  pruneIntervalMs?: number;
  /** Whether this process deletes expired keys (turn it off in tools and one-off processes). Default: true. */
  prune?: boolean;
  /**
   * Says who sent a request, so that keys are scoped per caller: another caller's request with the same key is a
   * new request, never a replay or a 422. Return a stable id of the client, or undefined for none (those requests
   * share the anonymous callers' keys). It runs after the route's guards; what it returns is stored hashed.
   * Default: `defaultIdentifyCaller`: `request.user`'s `sub`, `id` or `userId`, else the `Authorization` header
   * (the user name of Basic credentials), else none.
   */
  identifyCaller?: IdentifyCaller;
}

/** Idempotency options with every default applied and checked. */
export interface ResolvedIdempotencyOptions {
  ttlMs: number;
  lockTimeoutMs: number;
  pruneIntervalMs: number;
  prune: boolean;
  identifyCaller: IdentifyCaller;
}

const DAY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_IDEMPOTENCY_TTL_MS = DAY_MS;
export const DEFAULT_IDEMPOTENCY_LOCK_TIMEOUT_MS = 10_000;
export const DEFAULT_IDEMPOTENCY_PRUNE_INTERVAL_MS = 60_000;

/** Applies the defaults and checks every value, failing with a message that says how to fix it. */
export function resolveIdempotencyOptions(
  options: IdempotencyModuleOptions | undefined,
): ResolvedIdempotencyOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new ConfigurationError('IdempotencyModule: options must be an object like { ttlMs: 86400000 }');
  }
  const resolved: ResolvedIdempotencyOptions = {
    ttlMs: options?.ttlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS,
    lockTimeoutMs: options?.lockTimeoutMs ?? DEFAULT_IDEMPOTENCY_LOCK_TIMEOUT_MS,
    pruneIntervalMs: options?.pruneIntervalMs ?? DEFAULT_IDEMPOTENCY_PRUNE_INTERVAL_MS,
    prune: options?.prune ?? true,
    identifyCaller: options?.identifyCaller ?? defaultIdentifyCaller,
  };
  assertInteger('idempotency.ttlMs', resolved.ttlMs, 1000, 365 * DAY_MS);
  assertInteger('idempotency.lockTimeoutMs', resolved.lockTimeoutMs, 1, 600_000);
  assertInteger('idempotency.pruneIntervalMs', resolved.pruneIntervalMs, 1000, DAY_MS);
  if (typeof resolved.prune !== 'boolean') {
    throw new ConfigurationError(
      `IdempotencyModule: 'prune' must be true or false, got ${JSON.stringify(resolved.prune)}`,
    );
  }
  if (typeof resolved.identifyCaller !== 'function') {
    throw new ConfigurationError(
      "IdempotencyModule: 'identifyCaller' must be a function like (request) => request.user?.accountId, " +
        `got ${typeof resolved.identifyCaller}`,
    );
  }
  return resolved;
}

/** Options of `@Idempotent()`. */
export interface IdempotentOptions {
  /**
   * The namespace of this route's keys: a key used on one scope is unknown to every other. Give two routes one
   * scope to make a key reused across them a 422. Keys are scoped per caller as well (the module's
   * `identifyCaller`), whatever the scope. Default: `<Controller>.<method>`.
   */
  scope?: string;
  /** Refuse a request without an `Idempotency-Key` header with 400. Default: false (it runs as usual). */
  required?: boolean;
}
