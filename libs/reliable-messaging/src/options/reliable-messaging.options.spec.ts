import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { DEFAULT_JSON_LIMITS } from './json-limits.options';
import { resolveOptions, type ReliableMessagingModuleOptions } from './reliable-messaging.options';

const URL = 'amqp://app:secret@rabbit:5672/shop';

function failure(options: Partial<ReliableMessagingModuleOptions>): string {
  try {
    resolveOptions(options as ReliableMessagingModuleOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as Error).message;
  }
  throw new Error('the options were accepted');
}

describe('resolveOptions', () => {
  it('applies the documented defaults', () => {
    expect(resolveOptions({ urls: URL })).toMatchObject({
      urls: [URL],
      connectionName: 'reliable-messaging',
      heartbeatSeconds: 15,
      exchange: 'events',
      deadLetterExchange: 'events.dead-letter',
      defaultQueueType: 'quorum',
      defaultConcurrency: 10,
      defaultPrefetch: undefined,
      maxPayloadBytes: 262_144,
      jsonLimits: DEFAULT_JSON_LIMITS,
      publishConfirmTimeoutMs: 10_000,
      reconnect: { initialDelayMs: 250, maxDelayMs: 1_500 },
      startupTimeoutMs: 30_000,
      appId: 'reliable-messaging',
      deliveryLimitBackstop: 20,
      dataSource: undefined,
      consumersEnabled: true,
      shutdownTimeoutMs: 25_000,
      readinessRequiresBroker: true,
    });
  });

  it('keeps readiness up during a broker outage by default when publishing goes through the outbox', () => {
    const dataSource = {} as NonNullable<ReliableMessagingModuleOptions['dataSource']>;
    expect(resolveOptions({ urls: URL, dataSource }).readinessRequiresBroker).toBe(false);
    expect(
      resolveOptions({ urls: URL, dataSource, readinessRequiresBroker: true }).readinessRequiresBroker,
    ).toBe(true);
  });

  it('refuses the memory inbox of tests beside a dataSource, whose inbox is its table', () => {
    const dataSource = {} as NonNullable<ReliableMessagingModuleOptions['dataSource']>;
    expect(() => resolveOptions({ urls: URL, dataSource, inbox: { store: 'memory' } })).toThrow(
      /inbox.store 'memory' is for tests without a database/,
    );
  });

  it('derives the dead-letter exchange and app id from the exchange and connection name', () => {
    expect(resolveOptions({ urls: URL, exchange: 'shop', connectionName: 'billing' })).toMatchObject({
      deadLetterExchange: 'shop.dead-letter',
      appId: 'billing',
    });
  });

  it('keeps several URLs in order and drops empty ones', () => {
    expect(resolveOptions({ urls: ['amqp://a', '', 'amqps://b:5671'] }).urls).toEqual([
      'amqp://a',
      'amqps://b:5671',
    ]);
  });

  it.each<[string, Partial<ReliableMessagingModuleOptions>, string]>([
    ['no urls', {}, "'urls' is required, e.g. forRoot({ urls: process.env.AMQP_URL })"],
    ['urls from an unset variable', { urls: undefined }, "'urls' is required"],
    ['only empty urls', { urls: ['', ''] }, "'urls' is empty; give at least one amqp:// URL"],
    [
      'a host and port without a scheme',
      { urls: 'rabbit:5672' },
      "scheme 'rabbit:' is not supported; use amqp:// or amqps://",
    ],
    ['garbage', { urls: 'not a url' }, 'not a valid URL; expected amqp://user:password@host:5672/vhost'],
    [
      'an http URL',
      { urls: 'http://rabbit:15672' },
      "scheme 'http:' is not supported; use amqp:// or amqps://",
    ],
    [
      'an empty exchange',
      { urls: URL, exchange: '' },
      "'exchange' must be a non-empty name of at most 255 characters",
    ],
    [
      'a reserved exchange name',
      { urls: URL, exchange: 'amq.topic' },
      "not starting with 'amq.', got 'amq.topic'",
    ],
    [
      'a 256-character exchange',
      { urls: URL, exchange: 'e'.repeat(256) },
      "'exchange' must be a non-empty name",
    ],
    [
      'the same exchange for dead letters',
      { urls: URL, exchange: 'events', deadLetterExchange: 'events' },
      "'deadLetterExchange' must differ from 'exchange'",
    ],
    [
      'an unknown queue type',
      { urls: URL, defaultQueueType: 'stream' as never },
      "'defaultQueueType' must be 'quorum' or 'classic', got 'stream'",
    ],
    [
      'a negative heartbeat',
      { urls: URL, heartbeatSeconds: -1 },
      "'heartbeatSeconds' must be an integer from 0 to 600, got -1",
    ],
    [
      'zero concurrency',
      { urls: URL, defaultConcurrency: 0 },
      "'defaultConcurrency' must be an integer from 1 to 10000, got 0",
    ],
    [
      'a fractional prefetch',
      { urls: URL, defaultPrefetch: 2.5 },
      "'defaultPrefetch' must be an integer from 1 to 65535, got 2.5",
    ],
    [
      'a prefetch over 65535',
      { urls: URL, defaultPrefetch: 70_000 },
      "'defaultPrefetch' must be an integer from 1 to 65535",
    ],
    [
      'a zero payload limit',
      { urls: URL, maxPayloadBytes: 0 },
      "'maxPayloadBytes' must be an integer from 1 to 134217728, got 0",
    ],
    [
      'a JSON depth of 0',
      { urls: URL, jsonLimits: { maxDepth: 0 } },
      "ReliableMessagingModule: 'jsonLimits.maxDepth' must be an integer from 1 to 1000, got 0",
    ],
    [
      'a JSON depth deep enough to overflow the stack of class-transformer',
      { urls: URL, jsonLimits: { maxDepth: 20_000 } },
      "'jsonLimits.maxDepth' must be an integer from 1 to 1000, got 20000",
    ],
    [
      'forbidden keys as an array',
      { urls: URL, jsonLimits: { forbiddenKeys: ['__proto__'] as unknown as Set<string> } },
      "'jsonLimits.forbiddenKeys' must be a Set of key names",
    ],
    [
      'a confirm timeout of NaN',
      { urls: URL, publishConfirmTimeoutMs: Number.NaN },
      "'publishConfirmTimeoutMs' must be an integer from 1 to 600000, got NaN",
    ],
    [
      'a reconnect cap below the first delay',
      { urls: URL, reconnect: { initialDelayMs: 1000, maxDelayMs: 500 } },
      "'reconnect.maxDelayMs' must be an integer from 1000 to 3600000, got 500",
    ],
    [
      'a zero startup timeout',
      { urls: URL, startupTimeoutMs: 0 },
      "'startupTimeoutMs' must be an integer from 1 to 3600000, got 0",
    ],
    [
      'a negative shutdown timeout',
      { urls: URL, shutdownTimeoutMs: -1 },
      "'shutdownTimeoutMs' must be an integer from 0 to 3600000, got -1",
    ],
    [
      'a zero delivery limit',
      { urls: URL, deliveryLimitBackstop: 0 },
      "'deliveryLimitBackstop' must be an integer from 1 to 10000, got 0",
    ],
    [
      'a readiness setting that is not a boolean',
      { urls: URL, readinessRequiresBroker: 'yes' as never },
      "'readinessRequiresBroker' must be true or false, got yes",
    ],
    [
      'a numeric string',
      { urls: URL, defaultConcurrency: '5' as never },
      "'defaultConcurrency' must be an integer from 1 to 10000, got 5",
    ],
  ])('refuses %s with a message that says how to fix it', (_what, options, message) => {
    expect(failure(options)).toContain(message);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a misspelt top-level option',
      { urls: URL, defaultConcurency: 5 },
      'ReliableMessagingModule: unknown option `defaultConcurency`; did you mean `defaultConcurrency`?',
    ],
    ['a singular url', { url: URL }, 'ReliableMessagingModule: unknown option `url`; did you mean `urls`?'],
    [
      'a misspelt JSON limit',
      { urls: URL, jsonLimits: { maxDepht: 8 } },
      'ReliableMessagingModule: unknown option `jsonLimits.maxDepht`; did you mean `jsonLimits.maxDepth`?',
    ],
    [
      'an option of another library',
      { urls: URL, prefetchCount: 10 },
      'ReliableMessagingModule: unknown option `prefetchCount`; the options here are `urls`, `tls`,',
    ],
    [
      'a misspelt reconnect option',
      { urls: URL, reconnect: { maxDelay: 1000 } },
      'ReliableMessagingModule: unknown option `reconnect.maxDelay`; did you mean `reconnect.maxDelayMs`?',
    ],
    [
      'a misspelt outbox option',
      { urls: URL, outbox: { batchSise: 100 } },
      'ReliableMessagingModule: unknown option `outbox.batchSise`; did you mean `outbox.batchSize`?',
    ],
    [
      'a misspelt outbox retry delay option',
      { urls: URL, outbox: { retryDelay: { initialDelayMs: 100 } } },
      'ReliableMessagingModule: unknown option `outbox.retryDelay.initialDelayMs`; the options here are `outbox.retryDelay.initialMs`, `outbox.retryDelay.maxMs`',
    ],
    [
      'a misspelt inbox option',
      { urls: URL, inbox: { retentionMS: 1000 } },
      'ReliableMessagingModule: unknown option `inbox.retentionMS`; did you mean `inbox.retentionMs`?',
    ],
    [
      'a misspelt retry option',
      { urls: URL, retry: { maxAttempt: 3 } },
      'ReliableMessaging: unknown option `retry.maxAttempt`; did you mean `retry.maxAttempts`?',
    ],
    [
      'a misspelt claim-check option',
      { urls: URL, claimCheck: { treshholdBytes: 1 } },
      'ReliableMessagingModule: unknown option `claimCheck.treshholdBytes`; did you mean `claimCheck.thresholdBytes`?',
    ],
    [
      'a reconnect that is not an object',
      { urls: URL, reconnect: 5 },
      "ReliableMessagingModule: 'reconnect' must be an object like { maxDelayMs: 1500 }",
    ],
  ])('refuses %s at startup, naming the nearest known option', (_what, options, message) => {
    expect(failure(options as Partial<ReliableMessagingModuleOptions>)).toContain(message);
  });

  it('leaves tls to Node: its other connection options (minVersion, pfx, ...) go to the socket as they did', () => {
    const tls = { ca: 'ca', minVersion: 'TLSv1.3' } as ReliableMessagingModuleOptions['tls'];
    expect(() => resolveOptions({ urls: URL, tls })).not.toThrow();
  });

  it('accepts every documented option, nested ones included', () => {
    expect(() =>
      resolveOptions({
        urls: URL,
        tls: {
          ca: 'ca',
          cert: 'cert',
          key: 'key',
          passphrase: 'p',
          servername: 'rabbit',
          rejectUnauthorized: true,
        },
        reconnect: { initialDelayMs: 100, maxDelayMs: 1000 },
        outbox: { relay: false, retryDelay: { initialMs: 10, maxMs: 100 } },
        inbox: { retentionMs: 7 * 86_400_000, replayWindowMs: 86_400_000, pruneIntervalMs: 60_000 },
        retry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 1000, maxRedeliveries: 2 },
        defaultConcurrency: 5,
      }),
    ).not.toThrow();
  });

  it('never puts credentials into an error message', () => {
    expect(failure({ urls: 'http://app:secret@rabbit' })).not.toContain('secret');
    expect(failure({ urls: 'amqp://app:secret@rabbit', heartbeatSeconds: 1e6 })).not.toContain('secret');
  });
});
