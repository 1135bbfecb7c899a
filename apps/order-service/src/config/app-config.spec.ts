import { describe, expect, it } from '@jest/globals';
import { loadAppConfig } from './app-config';

describe('loadAppConfig', () => {
  it('falls back to the local defaults', () => {
    expect(loadAppConfig({})).toEqual({
      amqpUrls: ['amqp://guest:guest@127.0.0.1:5672'],
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/test',
      port: 3000,
      messaging: expect.objectContaining({ exchange: 'events' }),
      shutdownTimeoutMs: 25_000,
      handlerDeadlineMs: 30_000,
      receipt: { latencyMs: 20, failureRate: 0, ratePerSecond: 50 },
      reconnect: { initialDelayMs: 250, maxDelayMs: 1500 },
      idempotencyKeyTtlMs: 86_400_000,
      logFormat: 'text',
      paymentTimeoutMs: 900_000,
      retry: { maxAttempts: 12, initialDelayMs: 1000, maxDelayMs: 120_000 },
    });
  });

  it('reads every variable', () => {
    const config = loadAppConfig({
      AMQP_URL: 'amqp://a:5672, amqp://b:5672',
      DATABASE_URL: 'postgresql://app@db:5432/orders',
      PORT: '0',
      MESSAGING_NAMESPACE: 'blue',
      SHUTDOWN_TIMEOUT_MS: '40000',
      HANDLER_DEADLINE_MS: '5000',
      RECEIPT_URL: 'http://127.0.0.1:4100/',
      RECEIPT_LATENCY_MS: '5',
      RECEIPT_FAILURE_RATE: '0.25',
      RECEIPT_RATE_LIMIT: '200',
      RETRY_MAX_ATTEMPTS: '8',
      RETRY_INITIAL_DELAY_MS: '100',
      RETRY_MAX_DELAY_MS: '1000',
      RECONNECT_INITIAL_DELAY_MS: '100',
      RECONNECT_MAX_DELAY_MS: '800',
      IDEMPOTENCY_KEY_TTL_MS: '3600000',
      LOG_FORMAT: 'json',
      PAYMENT_TIMEOUT_MS: '3000',
    });

    expect(config).toEqual({
      amqpUrls: ['amqp://a:5672', 'amqp://b:5672'],
      databaseUrl: 'postgresql://app@db:5432/orders',
      port: 0,
      messaging: expect.objectContaining({ exchange: 'blue.events' }),
      shutdownTimeoutMs: 40_000,
      handlerDeadlineMs: 5000,
      receipt: { url: 'http://127.0.0.1:4100', latencyMs: 5, failureRate: 0.25, ratePerSecond: 200 },
      reconnect: { initialDelayMs: 100, maxDelayMs: 800 },
      idempotencyKeyTtlMs: 3_600_000,
      logFormat: 'json',
      paymentTimeoutMs: 3000,
      retry: { maxAttempts: 8, initialDelayMs: 100, maxDelayMs: 1000 },
    });
  });

  it('reads RECEIPT_RATE_LIMIT=0 as no limit on receipt calls', () => {
    expect(loadAppConfig({ RECEIPT_RATE_LIMIT: '0' }).receipt.ratePerSecond).toBe(0);
  });

  it.each([
    ['PORT', 'http', "PORT must be an integer from 0 to 65535; got 'http'"],
    ['PORT', '70000', "PORT must be an integer from 0 to 65535; got '70000'"],
    ['RECEIPT_FAILURE_RATE', '5%', "RECEIPT_FAILURE_RATE must be a number from 0 to 1; got '5%'"],
    ['RECEIPT_RATE_LIMIT', '-1', "RECEIPT_RATE_LIMIT must be an integer from 0 to 100000; got '-1'"],
    ['RETRY_MAX_ATTEMPTS', '0', "RETRY_MAX_ATTEMPTS must be an integer from 1 to 100; got '0'"],
    ['SHUTDOWN_TIMEOUT_MS', '0', "SHUTDOWN_TIMEOUT_MS must be an integer from 1 to 3600000; got '0'"],
    ['HANDLER_DEADLINE_MS', '10', "HANDLER_DEADLINE_MS must be an integer from 100 to 3600000; got '10'"],
    ['PAYMENT_TIMEOUT_MS', '1.5', "PAYMENT_TIMEOUT_MS must be an integer from 100 to 2592000000; got '1.5'"],
    ['RECEIPT_URL', 'ftp://x', "RECEIPT_URL must be an http:// or https:// URL; got 'ftp://x'"],
    [
      'RECEIPT_URL',
      'ftp://user:s3cret@x',
      "RECEIPT_URL must be an http:// or https:// URL; got 'ftp://***@x'",
    ],
    [
      'RECEIPT_URL',
      'https://user:s3cret@receipts.example.com',
      'RECEIPT_URL must not hold credentials (user:password@): give the receipt service its credentials in a header from a secret, not in the URL',
    ],
    [
      'RECEIPT_URL',
      'https://token@receipts.example.com',
      'RECEIPT_URL must not hold credentials (user:password@): give the receipt service its credentials in a header from a secret, not in the URL',
    ],
    ['RECONNECT_MAX_DELAY_MS', '0', "RECONNECT_MAX_DELAY_MS must be an integer from 1 to 600000; got '0'"],
    [
      'IDEMPOTENCY_KEY_TTL_MS',
      '24h',
      "IDEMPOTENCY_KEY_TTL_MS must be an integer from 1000 to 31536000000; got '24h'",
    ],
    ['LOG_FORMAT', 'xml', "LOG_FORMAT must be 'text' or 'json'; got 'xml'"],
    ['RECEIPT_LATENCY_MS', '1.5', "RECEIPT_LATENCY_MS must be an integer from 0 to 60000; got '1.5'"],
    [
      'DATABASE_URL',
      'mysql://db/orders',
      "DATABASE_URL must start with postgres:// or postgresql://; got 'mysql://'",
    ],
  ])('refuses %s=%p with a message saying what it expects', (name, value, message) => {
    expect(() => loadAppConfig({ [name]: value })).toThrow(message);
  });

  it('never echoes a DATABASE_URL it cannot parse, which may hold a password', () => {
    expect(() => loadAppConfig({ DATABASE_URL: 'postgres://app:s3cret@[bad' })).toThrow(
      /^DATABASE_URL is not a valid URL; expected postgres:\/\/user:password@host:5432\/database$/,
    );
  });
});
