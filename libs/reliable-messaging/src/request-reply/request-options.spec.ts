import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { requestTimeout } from './request-options';

describe('requestTimeout', () => {
  it.each([
    [5000, 5000],
    [0.5, 1],
    [86_400_000, 86_400_000],
  ])('accepts %p ms as %p', (timeoutMs, expected) => {
    expect(requestTimeout('price.quote', { timeoutMs })).toBe(expected);
  });

  it.each([
    ['no options', undefined, 'none'],
    ['no timeout', {}, 'none'],
    ['zero', { timeoutMs: 0 }, '0'],
    ['a negative number', { timeoutMs: -1 }, '-1'],
    ['NaN', { timeoutMs: Number.NaN }, 'NaN'],
    ['Infinity', { timeoutMs: Number.POSITIVE_INFINITY }, 'Infinity'],
    ['more than a day', { timeoutMs: 86_400_001 }, '86400001'],
    ['a string', { timeoutMs: '5000' as never }, 'a string'],
  ])('refuses %s with a ConfigurationError saying what to pass', (_case, options, got) => {
    expect(() => requestTimeout('price.quote', options)).toThrow(
      new ConfigurationError(
        "request() of 'price.quote' needs a timeout: pass { timeoutMs } as a positive number of milliseconds up to " +
          `86400000, e.g. request(message, { timeoutMs: 5000 }); got ${got}`,
      ),
    );
  });
});
