import { describe, expect, it } from '@jest/globals';
import { NonRetryableError } from '../errors/non-retryable.error';
import { compareVersions, isNewerVersion, type Version } from './version';

describe('compareVersions', () => {
  it.each<[string, Version, Version, number]>([
    ['an older counter', 6, 7, -1],
    ['the same counter', 7, 7, 0],
    ['a newer counter', 8, 7, 1],
    ['bigints', 9007199254740993n, 9007199254740992n, 1],
    ['a bigint with a number', 7n, 7, 0],
    ['a number with a bigint, past 2^53', 9007199254740992, 9007199254740993n, -1],
    ['Dates', new Date('2025-01-01T00:00:00.001Z'), new Date('2025-01-01T00:00:00.000Z'), 1],
    ['ISO timestamps', '2025-01-01T10:00:00Z', '2025-01-01T11:00:00+02:00', 1],
    ['an ISO timestamp with a Date', '2025-01-01T10:00:00.000Z', new Date('2025-01-01T10:00:00.000Z'), 0],
  ])('compares %s', (_what, a, b, expected) => {
    expect(compareVersions(a, b)).toBe(expected);
  });

  it.each<[string, Version, Version]>([
    ['NaN', NaN, 1],
    ['Infinity', Infinity, 1],
    ['an invalid Date', new Date('nope'), new Date()],
    ['a numeric string (it would compare as text)', '10', '9'],
    ['a date without a time', '2025-01-01', '2025-01-02'],
    ['a counter with a timestamp', 1, new Date()],
  ])('refuses %s as a NonRetryableError', (_what, a, b) => {
    expect(() => compareVersions(a, b)).toThrow(NonRetryableError);
  });
});

describe('isNewerVersion', () => {
  it('applies any valid version over no version held', () => {
    expect(isNewerVersion(1, undefined)).toBe(true);
    expect(isNewerVersion(new Date(), null)).toBe(true);
    expect(() => isNewerVersion(NaN, undefined)).toThrow(NonRetryableError);
  });

  it('treats an equal version as not newer: the state already reflects it', () => {
    expect(isNewerVersion(3, 3)).toBe(false);
    expect(isNewerVersion(2, 3)).toBe(false);
    expect(isNewerVersion(4, 3)).toBe(true);
  });
});
