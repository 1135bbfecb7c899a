import { scrubCredentials } from 'nestjs-reliable-messaging';
import { messagingNames, type MessagingNames } from './messaging-names';

/** The order service's configuration, read from the environment once at startup. */
export interface AppConfig {
  /** `AMQP_URL`, comma-separated for a cluster. Default: `amqp://guest:guest@127.0.0.1:5672`. */
  amqpUrls: string[];
  /** `DATABASE_URL`. Default: `postgres://postgres@127.0.0.1:5432/test`. */
  databaseUrl: string;
  /** `PORT`; 0 picks a free port. Default: 3000. */
  port: number;
  /** Exchange and queues, under `MESSAGING_NAMESPACE` when set. Default: no namespace. */
  messaging: MessagingNames;
  /**
   * `SHUTDOWN_TIMEOUT_MS`: how long graceful shutdown waits for handlers in flight (the module's
   * `shutdownTimeoutMs`); keep it below the pod's terminationGracePeriodSeconds. Default: 25000.
   */
  shutdownTimeoutMs: number;
  /**
   * `HANDLER_DEADLINE_MS`: the consumers' handler deadline (the module's `defaultDeadlineMs`); past it a handler's
   * signal aborts and the attempt ends. Default: 30000, as the module's.
   */
  handlerDeadlineMs: number;
  /**
   * `ADMIN_TOKEN`: bearer token (at least 32 characters) of the admin API for dead letters and parked outbox
   * rows, served under `/admin/dead-letters`, and the token the operator console (`/admin/dead-letters/console`)
   * signs in with; unset, neither is mounted. An operator's token: it may replay, edit and purge. Default: unset.
   */
  adminToken?: string;
  /** `ADMIN_VIEWER_TOKEN`: a second token, read-only (role viewer), with `ADMIN_TOKEN` only. Default: unset. */
  adminViewerToken?: string;
  /**
   * `CONSOLE_SESSION_SECRET`: the key that signs console sessions; give every replica the same one so that each
   * accepts the others' sign-ins. Default: unset (a random key per process, for a single replica).
   */
  consoleSessionSecret?: string;
  /** The receipt service. */
  receipt: {
    /**
     * `RECEIPT_URL`: base URL of an HTTP receipt service (`POST <url>/receipts`), without credentials (a
     * `user:password@` is refused at startup); unset, the app uses its in-process stand-in. Default: unset.
     */
    url?: string;
    /** `RECEIPT_LATENCY_MS` (the stand-in only): mean latency of a call; each call takes 0.5 to 1.5 times this. Default: 20. */
    latencyMs: number;
    /** `RECEIPT_FAILURE_RATE` (the stand-in only): share of calls failing with a transient error, from 0 to 1. Default: 0. */
    failureRate: number;
    /**
     * `RECEIPT_RATE_LIMIT`: receipt calls a second at most, the receipt service's quota (the receipt consumer's
     * rate limit, read once when the consumer loads); 0 sets no limit. Default: 50.
     */
    ratePerSecond: number;
  };
  /**
   * How the broker connections come back after they drop (the module's `reconnect` option): attempts with full
   * jitter up to the cap, so the app tries again within the cap of the broker accepting connections again.
   */
  reconnect: {
    /** `RECONNECT_INITIAL_DELAY_MS`: ceiling of the first attempt's delay, doubled by each later one. Default: 250, as the module's. */
    initialDelayMs: number;
    /** `RECONNECT_MAX_DELAY_MS`: cap on any attempt's delay. Default: 1500, as the module's. */
    maxDelayMs: number;
  };
  /**
   * `IDEMPOTENCY_KEY_TTL_MS`: how long an `Idempotency-Key` of `POST /orders` is remembered after its order
   * committed (the idempotency module's `ttlMs`). Default: 86400000 (24 hours), as the module's.
   */
  idempotencyKeyTtlMs: number;
  /** `LOG_FORMAT`: `text`, one line a record, coloured unless `NO_COLOR` is set; or `json`, one JSON object a line. Default: `text`. */
  logFormat: LogFormat;
  /**
   * `PAYMENT_TIMEOUT_MS`: how long the order saga waits for an order's payment before it cancels the order and
   * publishes OrderCancelled. Default: 900000 (15 minutes).
   */
  paymentTimeoutMs: number;
  /** How the consumers retry a failed message (the module's `retry` option). */
  retry: {
    /** `RETRY_MAX_ATTEMPTS`: attempts in all, the first included, 1 to 100. Default: 12, as the module's. */
    maxAttempts: number;
    /** `RETRY_INITIAL_DELAY_MS`: ceiling of the first retry's delay, doubled by each later one. Default: 1000. */
    initialDelayMs: number;
    /** `RETRY_MAX_DELAY_MS`: cap on any retry's delay ceiling. Default: 120000, as the module's. */
    maxDelayMs: number;
  };
}

/** How the app writes its logs. */
export type LogFormat = 'text' | 'json';

/** Injection token of the {@link AppConfig}. */
export const APP_CONFIG = Symbol('APP_CONFIG');

export const DEFAULT_AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const DEFAULT_PORT = 3000;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;
export const DEFAULT_HANDLER_DEADLINE_MS = 30_000;
export const DEFAULT_RECEIPT_LATENCY_MS = 20;
export const DEFAULT_RECEIPT_FAILURE_RATE = 0;
export const DEFAULT_RECEIPT_RATE_LIMIT = 50;
export const DEFAULT_RECONNECT_INITIAL_DELAY_MS = 250;
export const DEFAULT_RECONNECT_MAX_DELAY_MS = 1500;
export const DEFAULT_RETRY_MAX_ATTEMPTS = 12;
export const DEFAULT_RETRY_INITIAL_DELAY_MS = 1000;
export const DEFAULT_RETRY_MAX_DELAY_MS = 120_000;
export const DEFAULT_IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_PAYMENT_TIMEOUT_MS = 15 * 60 * 1000;

/** Reads and checks the configuration; a bad value fails with a message naming the variable and what it expects. */
export function loadAppConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const amqpUrls = (env.AMQP_URL || DEFAULT_AMQP_URL)
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  const databaseUrl = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  assertDatabaseUrl(databaseUrl);
  return {
    amqpUrls,
    databaseUrl,
    port: readNumber(env, 'PORT', DEFAULT_PORT, { min: 0, max: 65_535, integer: true }),
    messaging: messagingNames(env.MESSAGING_NAMESPACE),
    shutdownTimeoutMs: readNumber(env, 'SHUTDOWN_TIMEOUT_MS', DEFAULT_SHUTDOWN_TIMEOUT_MS, {
      min: 1,
      max: 3_600_000,
      integer: true,
    }),
    handlerDeadlineMs: readNumber(env, 'HANDLER_DEADLINE_MS', DEFAULT_HANDLER_DEADLINE_MS, {
      min: 100,
      max: 3_600_000,
      integer: true,
    }),
    ...readAdminToken(env),
    receipt: {
      ...readReceiptUrl(env),
      latencyMs: readNumber(env, 'RECEIPT_LATENCY_MS', DEFAULT_RECEIPT_LATENCY_MS, {
        min: 0,
        max: 60_000,
        integer: true,
      }),
      failureRate: readNumber(env, 'RECEIPT_FAILURE_RATE', DEFAULT_RECEIPT_FAILURE_RATE, {
        min: 0,
        max: 1,
        integer: false,
      }),
      ratePerSecond: readReceiptRateLimit(env),
    },
    reconnect: {
      initialDelayMs: readNumber(env, 'RECONNECT_INITIAL_DELAY_MS', DEFAULT_RECONNECT_INITIAL_DELAY_MS, {
        min: 1,
        max: 600_000,
        integer: true,
      }),
      maxDelayMs: readNumber(env, 'RECONNECT_MAX_DELAY_MS', DEFAULT_RECONNECT_MAX_DELAY_MS, {
        min: 1,
        max: 600_000,
        integer: true,
      }),
    },
    idempotencyKeyTtlMs: readNumber(env, 'IDEMPOTENCY_KEY_TTL_MS', DEFAULT_IDEMPOTENCY_KEY_TTL_MS, {
      min: 1000,
      max: 365 * 24 * 60 * 60 * 1000,
      integer: true,
    }),
    logFormat: readLogFormat(env),
    paymentTimeoutMs: readNumber(env, 'PAYMENT_TIMEOUT_MS', DEFAULT_PAYMENT_TIMEOUT_MS, {
      min: 100,
      max: 30 * 24 * 60 * 60 * 1000,
      integer: true,
    }),
    retry: {
      maxAttempts: readNumber(env, 'RETRY_MAX_ATTEMPTS', DEFAULT_RETRY_MAX_ATTEMPTS, {
        min: 1,
        max: 100,
        integer: true,
      }),
      initialDelayMs: readNumber(env, 'RETRY_INITIAL_DELAY_MS', DEFAULT_RETRY_INITIAL_DELAY_MS, {
        min: 0,
        max: 86_400_000,
        integer: true,
      }),
      maxDelayMs: readNumber(env, 'RETRY_MAX_DELAY_MS', DEFAULT_RETRY_MAX_DELAY_MS, {
        min: 0,
        max: 86_400_000,
        integer: true,
      }),
    },
  };
}

/** `LOG_FORMAT`, read before the app is made (its logger is), so main.ts calls this directly. */
export function readLogFormat(env: NodeJS.ProcessEnv): LogFormat {
  const text = (env.LOG_FORMAT ?? '').trim();
  if (text === '' || text === 'text') return 'text';
  if (text === 'json') return 'json';
  throw new Error(`LOG_FORMAT must be 'text' or 'json'; got '${text}'`);
}

function readNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  range: { min: number; max: number; integer: boolean },
): number {
  const text = env[name];
  if (text === undefined || text.trim() === '') return fallback;
  const value = Number(text);
  if (
    !Number.isFinite(value) ||
    value < range.min ||
    value > range.max ||
    (range.integer && !Number.isInteger(value))
  ) {
    throw new Error(
      `${name} must be ${range.integer ? 'an integer' : 'a number'} from ${range.min} to ${range.max}; got '${text}'`,
    );
  }
  return value;
}

/**
 * `ADMIN_TOKEN`, `ADMIN_VIEWER_TOKEN` and `CONSOLE_SESSION_SECRET`, checked; read when the app module loads,
 * since they decide whether the admin API is mounted. The admin module checks each one's strength in turn.
 */
export function readAdminToken(
  env: NodeJS.ProcessEnv,
): Pick<AppConfig, 'adminToken' | 'adminViewerToken' | 'consoleSessionSecret'> {
  const token = adminSecret(env, 'ADMIN_TOKEN');
  if (!token) return {};
  const viewer = adminSecret(env, 'ADMIN_VIEWER_TOKEN');
  const secret = adminSecret(env, 'CONSOLE_SESSION_SECRET');
  return {
    adminToken: token,
    ...(viewer ? { adminViewerToken: viewer } : {}),
    ...(secret ? { consoleSessionSecret: secret } : {}),
  };
}

function adminSecret(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  if (!value) return undefined;
  // A secret: name the variable, never echo its value.
  if (value.length < 32 || /\s/.test(value)) {
    throw new Error(
      `${name} must be at least 32 characters with no spaces; generate one with: openssl rand -hex 32`,
    );
  }
  return value;
}

/**
 * `RECEIPT_RATE_LIMIT`, checked; for the receipt consumer's `@Consume()` options, fixed when its class loads. 0
 * means no limit (a receipt service without a quota, or a benchmark measuring the flow rather than the quota).
 */
export function readReceiptRateLimit(env: NodeJS.ProcessEnv): number {
  return readNumber(env, 'RECEIPT_RATE_LIMIT', DEFAULT_RECEIPT_RATE_LIMIT, {
    min: 0,
    max: 100_000,
    integer: true,
  });
}

function readReceiptUrl(env: NodeJS.ProcessEnv): { url?: string } {
  const text = env.RECEIPT_URL?.trim();
  if (!text) return {};
  let protocol: string | undefined;
  try {
    protocol = new URL(text).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new Error(`RECEIPT_URL must be an http:// or https:// URL; got '${scrubCredentials(text)}'`);
  }
  // fetch refuses a URL with a user or password in it, with an error quoting the URL: every receipt would fail
  // and put the password into logs and dead letters. Refused here, at startup, without echoing the value.
  const { username, password } = new URL(text);
  if (username !== '' || password !== '') {
    throw new Error(
      'RECEIPT_URL must not hold credentials (user:password@): give the receipt service its credentials in a header from a secret, not in the URL',
    );
  }
  return { url: text.replace(/\/+$/, '') };
}

function assertDatabaseUrl(url: string): void {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    // The URL may hold a password: name the variable, never echo its value.
    throw new Error('DATABASE_URL is not a valid URL; expected postgres://user:password@host:5432/database');
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new Error(`DATABASE_URL must start with postgres:// or postgresql://; got '${protocol}//'`);
  }
}
