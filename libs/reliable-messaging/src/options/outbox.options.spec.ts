import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { resolveOutboxOptions, type OutboxOptions } from './outbox.options';

describe('resolveOutboxOptions', () => {
  it('applies the documented defaults', () => {
    expect(resolveOutboxOptions(undefined)).toEqual({
      relay: true,
      batchSize: 200,
      concurrency: 2,
      inFlightPerKey: 1000,
      pollIntervalMs: 1000,
      retentionMs: 3_600_000,
      pruneIntervalMs: 60_000,
      retryDelay: { initialMs: 1000, maxMs: 60_000 },
    });
  });

  it('keeps given values and raises the retry cap to a larger first delay', () => {
    expect(
      resolveOutboxOptions({
        relay: false,
        batchSize: 50,
        retentionMs: 0,
        retryDelay: { initialMs: 90_000 },
      }),
    ).toMatchObject({
      relay: false,
      batchSize: 50,
      retentionMs: 0,
      retryDelay: { initialMs: 90_000, maxMs: 90_000 },
    });
  });

  it.each<[string, OutboxOptions | string, RegExp]>([
    ['a batch of none', { batchSize: 0 }, /'outbox.batchSize' must be an integer from 1 to 1000, got 0/],
    [
      'no row of a key in flight',
      { inFlightPerKey: 0 },
      /'outbox.inFlightPerKey' must be an integer from 1 to 1000, got 0/,
    ],
    [
      'a batch above the advisory-lock bound',
      { batchSize: 5000 },
      /'outbox.batchSize' must be an integer from 1 to 1000/,
    ],
    [
      'no relay rounds at all',
      { concurrency: 0 },
      /'outbox.concurrency' must be an integer from 1 to 8, got 0/,
    ],
    ['a busy-looping poll', { pollIntervalMs: 1 }, /'outbox.pollIntervalMs' must be an integer from 10/],
    ['a negative retention', { retentionMs: -1 }, /'outbox.retentionMs' must be an integer from 0/],
    [
      'a fractional prune interval',
      { pruneIntervalMs: 1500.5 },
      /'outbox.pruneIntervalMs' must be an integer/,
    ],
    [
      'a retry cap below the first delay',
      { retryDelay: { initialMs: 500, maxMs: 100 } },
      /'outbox.retryDelay.maxMs' must be an integer from 500/,
    ],
    [
      'a relay flag that is not a boolean',
      { relay: 'yes' as unknown as boolean },
      /'outbox.relay' must be true or false, got yes/,
    ],
    ['not an object', 'fast', /'outbox' must be an object/],
  ])('refuses %s with a message naming the option', (_case, options, message) => {
    const resolve = (): unknown => resolveOutboxOptions(options as OutboxOptions);
    expect(resolve).toThrow(ConfigurationError);
    expect(resolve).toThrow(message);
  });
});
