import type { CanActivate, Type } from '@nestjs/common';
import { ConfigurationError } from 'nestjs-reliable-messaging';

/** Options of `DeadLetterAdminModule.register()`. A token or a guard is required: the API is never open. */
export interface DeadLetterAdminOptions {
  /** The path the API is served under. Default: `admin/dead-letters`. */
  path?: string;
  /**
   * Bearer tokens by name (`Authorization: Bearer <token>`), each at least 32 characters; the name is recorded
   * as the actor in the audit trail. Default: none.
   */
  tokens?: Record<string, string | undefined>;
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
}

/** Admin options with defaults applied. */
export interface ResolvedDeadLetterAdminOptions {
  path: string;
  tokens: Array<{ name: string; token: string }>;
  guard?: Type<CanActivate>;
  actor?: (request: unknown) => string | undefined;
  maxBatchSize: number;
  maxReadBytesPerRequest: number;
  console: boolean;
  consoleSessionTtlMs: number;
}

/** Injection token of the resolved admin options. */
export const DEAD_LETTER_ADMIN_OPTIONS = Symbol('DEAD_LETTER_ADMIN_OPTIONS');

export const DEFAULT_ADMIN_PATH = 'admin/dead-letters';
export const DEFAULT_ADMIN_MAX_BATCH_SIZE = 100;
export const DEFAULT_ADMIN_MAX_READ_BYTES = 64 * 1024 * 1024;
const MIN_READ_BYTES = 1024 * 1024;
export const DEFAULT_CONSOLE_SESSION_TTL_MS = 8 * 3_600_000;
const MIN_TOKEN_LENGTH = 32;

/** Applies defaults and checks the options, failing with a message that says how to fix them. */
export function resolveAdminOptions(options: DeadLetterAdminOptions): ResolvedDeadLetterAdminOptions {
  const tokens = Object.entries(options?.tokens ?? {}).map(([name, token]) => {
    if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH) {
      throw new ConfigurationError(
        `DeadLetterAdminModule: token '${name}' must be at least ${MIN_TOKEN_LENGTH} characters ` +
          `(is its environment variable set?); generate one with: openssl rand -hex 32`,
      );
    }
    return { name, token };
  });
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
  return {
    path,
    tokens,
    guard: options.guard,
    actor: options.actor,
    maxBatchSize,
    maxReadBytesPerRequest,
    console: options.console === true,
    consoleSessionTtlMs,
  };
}
