import type { CanActivate, Type } from '@nestjs/common';
import { ConfigurationError } from 'nestjs-reliable-messaging';
import { ADMIN_ROLES, type AdminRole } from './admin-role';
import { tokenWeakness } from './admin-token-strength';

/** A token and what it may do, as `tokens` takes it beside a plain token string (an operator's). */
export interface AdminTokenOption {
  token: string | undefined;
  /** `viewer` (reads only) or `operator` (reads and acts). */
  role: AdminRole;
}

/** A token in the list form of `tokens`. */
export interface NamedAdminTokenOption extends AdminTokenOption {
  /** The name the audit trail records as the actor (`token:<name>`). Default: `<role>-<position from 1>`. */
  name?: string;
}

/** How many refused tokens or sign-ins one client address may send in a window before it gets 429. */
export interface AdminAuthFailureLimit {
  /** Refusals allowed per window; the next attempt answers 429 with Retry-After. Default: 5. */
  failures?: number;
  /** The sliding window. Default: 5 minutes. */
  windowMs?: number;
}

/** Options of `DeadLetterAdminModule.register()`. A token or a guard is required: the API is never open. */
export interface DeadLetterAdminOptions {
  /** The path the API is served under. Default: `admin/dead-letters`. */
  path?: string;
  /**
   * Bearer tokens (`Authorization: Bearer <token>`, and the console's sign-in), by name or as a list; the name
   * is recorded as the actor in the audit trail. A plain string is an operator's token;
   * `{ token, role: 'viewer' }` may only read. Each must be at least 32 characters and look random (a repeated
   * letter is refused at startup). Default: none.
   *
   * @example { ops: process.env.DLQ_ADMIN_TOKEN, support: { token: process.env.DLQ_VIEWER_TOKEN, role: 'viewer' } }
   */
  tokens?: Record<string, string | undefined | AdminTokenOption> | NamedAdminTokenOption[];
  /** A guard of your own (your auth), run after the token check when both are given. Default: none. */
  guard?: Type<CanActivate>;
  /** Who a request is, for the audit trail, when a guard of your own let it in. Default: `request.user`'s id, username or name, else `admin-api`. */
  actor?: (request: unknown) => string | undefined;
  /** The most messages (or parked outbox rows) one request may list, replay, purge, retry or discard. Default: 100. */
  maxBatchSize?: number;
  /**
   * The most bytes one list or overview reads from the dead-letter queues, bodies included (the broker delivers
   * each body whole, though a list keeps only its size). A read that reaches it stops and says the answer is
   * partial. At least 1 MiB. Default: 64 MiB.
   */
  maxReadBytesPerRequest?: number;
  /**
   * Serve the operator console, a web page for the same operations, under `<path>/console`, behind the same
   * tokens (a sign-in form) or guard. Default: false.
   */
  console?: boolean;
  /** How long a console sign-in lasts. Default: 8 hours. */
  consoleSessionTtlMs?: number;
  /**
   * The key that signs console sessions, at least 32 characters and random: give every replica the same one
   * so that each accepts the others' sessions. Default: a random key per process, so a session holds only on
   * the replica that issued it, and a restart signs everyone out (fine for a single replica).
   */
  consoleSessionSecret?: string;
  /** Rate limit on refused tokens and sign-ins, per client address (`request.ip`). Default: 5 per 5 minutes. */
  authFailureLimit?: AdminAuthFailureLimit;
}

/** Admin options with defaults applied. */
export interface ResolvedDeadLetterAdminOptions {
  path: string;
  tokens: Array<{ name: string; token: string; role: AdminRole }>;
  guard?: Type<CanActivate>;
  actor?: (request: unknown) => string | undefined;
  maxBatchSize: number;
  maxReadBytesPerRequest: number;
  console: boolean;
  consoleSessionTtlMs: number;
  consoleSessionSecret?: string;
  authFailureLimit: Required<AdminAuthFailureLimit>;
}

/** Injection token of the resolved admin options. */
export const DEAD_LETTER_ADMIN_OPTIONS = Symbol('DEAD_LETTER_ADMIN_OPTIONS');

export const DEFAULT_ADMIN_PATH = 'admin/dead-letters';
export const DEFAULT_ADMIN_MAX_BATCH_SIZE = 100;
export const DEFAULT_ADMIN_MAX_READ_BYTES = 64 * 1024 * 1024;
const MIN_READ_BYTES = 1024 * 1024;
export const DEFAULT_CONSOLE_SESSION_TTL_MS = 8 * 3_600_000;
export const DEFAULT_AUTH_FAILURE_LIMIT: Required<AdminAuthFailureLimit> = { failures: 5, windowMs: 300_000 };

/** Applies defaults and checks the options, failing with a message that says how to fix them. */
export function resolveAdminOptions(options: DeadLetterAdminOptions): ResolvedDeadLetterAdminOptions {
  const tokens = resolveTokens(options?.tokens);
  if (tokens.length === 0 && !options?.guard) {
    throw new ConfigurationError(
      "DeadLetterAdminModule: give 'tokens' (e.g. { ops: process.env.DLQ_ADMIN_TOKEN }) or a 'guard' of your own; the API is never open",
    );
  }
  const maxBatchSize = options.maxBatchSize ?? DEFAULT_ADMIN_MAX_BATCH_SIZE;
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1 || maxBatchSize > 10_000) {
    throw new ConfigurationError(
      `DeadLetterAdminModule: 'maxBatchSize' must be an integer from 1 to 10000, got ${String(maxBatchSize)}`,
    );
  }
  const maxReadBytesPerRequest = options.maxReadBytesPerRequest ?? DEFAULT_ADMIN_MAX_READ_BYTES;
  if (!Number.isSafeInteger(maxReadBytesPerRequest) || maxReadBytesPerRequest < MIN_READ_BYTES) {
    throw new ConfigurationError(
      `DeadLetterAdminModule: 'maxReadBytesPerRequest' must be an integer of at least ${MIN_READ_BYTES} (1 MiB), got ${String(maxReadBytesPerRequest)}`,
    );
  }
  const path = (options.path ?? DEFAULT_ADMIN_PATH).replace(/^\/+|\/+$/g, '');
  if (path === '') throw new ConfigurationError("DeadLetterAdminModule: 'path' must not be empty");
  const consoleSessionTtlMs = options.consoleSessionTtlMs ?? DEFAULT_CONSOLE_SESSION_TTL_MS;
  if (!Number.isInteger(consoleSessionTtlMs) || consoleSessionTtlMs < 60_000) {
    throw new ConfigurationError(
      `DeadLetterAdminModule: 'consoleSessionTtlMs' must be an integer of at least 60000 (a minute), got ${String(consoleSessionTtlMs)}`,
    );
  }
  const consoleSessionSecret = options.consoleSessionSecret;
  if (consoleSessionSecret !== undefined) {
    const weakness =
      typeof consoleSessionSecret === 'string' ? tokenWeakness(consoleSessionSecret) : 'is not a string';
    if (weakness) {
      throw new ConfigurationError(
        `DeadLetterAdminModule: 'consoleSessionSecret' ${weakness} (is its environment variable set?); ` +
          `generate one with: openssl rand -hex 32, and give every replica the same one`,
      );
    }
  }
  return {
    path,
    tokens,
    guard: options.guard,
    actor: options.actor,
    maxBatchSize,
    maxReadBytesPerRequest,
    console: options.console === true,
    consoleSessionTtlMs,
    consoleSessionSecret,
    authFailureLimit: resolveFailureLimit(options.authFailureLimit),
  };
}

/** The tokens of either form as one list, each checked: long and random enough, a known role, a unique name. */
function resolveTokens(option: DeadLetterAdminOptions['tokens']): ResolvedDeadLetterAdminOptions['tokens'] {
  const given: NamedAdminTokenOption[] = Array.isArray(option)
    ? option.map((entry, index) => ({ ...entry, name: entry?.name ?? `${entry?.role}-${index + 1}` }))
    : Object.entries(option ?? {}).map(([name, entry]) =>
        typeof entry === 'object' && entry !== null
          ? { ...entry, name }
          : { token: entry, role: 'operator' as const, name },
      );
  const names = new Set<string>();
  return given.map(({ name = '', token, role }) => {
    if (typeof token !== 'string') {
      throw new ConfigurationError(
        `DeadLetterAdminModule: token '${name}' is missing (is its environment variable set?); generate one with: openssl rand -hex 32`,
      );
    }
    const weakness = tokenWeakness(token);
    if (weakness) {
      throw new ConfigurationError(
        `DeadLetterAdminModule: token '${name}' ${weakness}; generate one with: openssl rand -hex 32`,
      );
    }
    if (!ADMIN_ROLES.includes(role)) {
      throw new ConfigurationError(
        `DeadLetterAdminModule: token '${name}' has role ${JSON.stringify(role)}; give 'viewer' or 'operator'`,
      );
    }
    if (name === '' || names.has(name)) {
      throw new ConfigurationError(
        `DeadLetterAdminModule: each token needs a name of its own, got '${name}' twice or empty`,
      );
    }
    names.add(name);
    return { name, token, role };
  });
}

function resolveFailureLimit(option: AdminAuthFailureLimit | undefined): Required<AdminAuthFailureLimit> {
  const limit = { ...DEFAULT_AUTH_FAILURE_LIMIT, ...option };
  if (
    !Number.isInteger(limit.failures) ||
    limit.failures < 1 ||
    !Number.isInteger(limit.windowMs) ||
    limit.windowMs < 1000
  ) {
    throw new ConfigurationError(
      `DeadLetterAdminModule: 'authFailureLimit' needs 'failures' an integer of at least 1 and 'windowMs' an integer of at least 1000, got ${JSON.stringify(option)}`,
    );
  }
  return limit;
}
