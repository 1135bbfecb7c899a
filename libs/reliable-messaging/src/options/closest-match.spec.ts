import { describe, expect, it } from '@jest/globals';
import { closestMatch, editDistance } from './closest-match';

describe('editDistance', () => {
  it.each([
    ['identical words', 'retry', 'retry', 0],
    ['a letter missing', 'defaultConcurency', 'defaultConcurrency', 1],
    ['a letter too many', 'batchSizze', 'batchSize', 1],
    ['a letter changed', 'batchSise', 'batchSize', 1],
    ['two neighbours swapped (one edit, not two)', 'maxAttmepts', 'maxAttempts', 1],
    ['letter case only', 'defaultconcurrency', 'defaultConcurrency', 0],
    ['an empty word against a word', '', 'tls', 3],
    ['nothing in common', 'abc', 'xyz', 3],
    ['a swap and a missing letter', 'intialDealyMs', 'initialDelayMs', 2],
  ])('%s: %s -> %s is %d', (_case, a, b, expected) => {
    expect(editDistance(a, b)).toBe(expected);
    expect(editDistance(b, a)).toBe(expected);
  });
});

describe('closestMatch', () => {
  const MODULE_KEYS = ['urls', 'tls', 'defaultConcurrency', 'defaultPrefetch', 'defaultQueueType', 'retry'];

  it.each([
    ['a missing letter', 'defaultConcurency', 'defaultConcurrency'],
    ['a swap', 'defualtPrefetch', 'defaultPrefetch'],
    ['a singular for a plural', 'url', 'urls'],
    ['another letter case', 'DefaultQueueType', 'defaultQueueType'],
    ['a short key one letter off', 'tsl', 'tls'],
    ['a word too far from any key', 'concurrency', undefined],
    ['an unrelated short word', 'foo', undefined],
  ])('%s: %s -> %s', (_case, word, expected) => {
    expect(closestMatch(word, MODULE_KEYS)).toBe(expected);
  });

  it('prefers the nearer of two near candidates, and the first listed of two equally near', () => {
    expect(closestMatch('retrys', ['retry', 'retries'])).toBe('retry');
    expect(closestMatch('ab', ['ac', 'ad'])).toBe('ac');
  });

  it('finds nothing among no candidates', () => {
    expect(closestMatch('retry', [])).toBeUndefined();
  });
});
