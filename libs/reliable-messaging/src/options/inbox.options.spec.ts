import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { inboxRetentionWarning, resolveInboxOptions, type InboxOptions } from './inbox.options';

const DAY = 86_400_000;

describe('resolveInboxOptions', () => {
  it('applies the documented defaults: 7 days kept, a 3-day replay window, pruned every minute, in the database', () => {
    expect(resolveInboxOptions(undefined)).toEqual({
      retentionMs: 7 * DAY,
      replayWindowMs: 3 * DAY,
      pruneIntervalMs: 60_000,
      store: 'database',
    });
  });

  it.each<[string, InboxOptions | number, RegExp]>([
    ['a retention under a second', { retentionMs: 10 }, /'inbox.retentionMs' must be an integer from 1000/],
    ['a negative replay window', { replayWindowMs: -5 }, /'inbox.replayWindowMs' must be an integer from 0/],
    [
      'a prune interval over a day',
      { pruneIntervalMs: 2 * DAY },
      /'inbox.pruneIntervalMs' must be an integer from 1000 to 86400000/,
    ],
    ['not an object', 42, /'inbox' must be an object/],
    [
      'a store of another kind',
      { store: 'redis' as 'memory' },
      /'inbox.store' must be 'database' or 'memory', got "redis"/,
    ],
  ])('refuses %s with a message naming the option', (_case, options, message) => {
    const resolve = (): unknown => resolveInboxOptions(options as InboxOptions);
    expect(resolve).toThrow(ConfigurationError);
    expect(resolve).toThrow(message);
  });
});

describe('inboxRetentionWarning', () => {
  it.each([
    ['the defaults', resolveInboxOptions(undefined), undefined],
    [
      'a retention equal to the replay window',
      resolveInboxOptions({ retentionMs: DAY, replayWindowMs: DAY }),
      /does not exceed/,
    ],
    [
      'a retention shorter than the replay window',
      resolveInboxOptions({ retentionMs: DAY, replayWindowMs: 2 * DAY }),
      /Raise inbox.retentionMs/,
    ],
  ])('for %s', (_case, options, expected) => {
    const warning = inboxRetentionWarning(options);
    if (expected === undefined) expect(warning).toBeUndefined();
    else expect(warning).toMatch(expected);
  });
});
