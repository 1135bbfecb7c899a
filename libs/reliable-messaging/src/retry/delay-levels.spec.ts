import { describe, expect, it } from '@jest/globals';
import {
  DELAY_LEVELS,
  DELAY_RESOLUTION_MS,
  delayEntryExchange,
  delayOfRoutingKey,
  delayLevelName,
  delayLevelNames,
  delayRoutingKey,
  deliverExchangeName,
  levelBindingPattern,
  levelsFor,
  levelTtlMs,
  quantiseDelay,
} from './delay-levels';

/** Whether a topic binding pattern matches a routing key, as RabbitMQ's topic exchange does (`*` one word, `#` any). */
function topicMatches(pattern: string, key: string): boolean {
  const match = (p: string[], k: string[]): boolean => {
    if (p.length === 0) return k.length === 0;
    if (p[0] === '#') return match(p.slice(1), k) || (k.length > 0 && match(p, k.slice(1)));
    return k.length > 0 && (p[0] === '*' || p[0] === k[0]) && match(p.slice(1), k.slice(1));
  };
  return match(pattern.split('.'), key.split('.'));
}

/** The total wait of a message published for `delay`, following the bindings down from its entry level. */
function waitThroughLevels(delay: number): number {
  const key = delayRoutingKey(delay);
  const entry = delayEntryExchange('events', delay);
  if (entry === deliverExchangeName('events')) return 0;
  let total = 0;
  for (let level = Number(entry.slice(-2)); level >= 0; level--) {
    const intoQueue = topicMatches(levelBindingPattern(level, 1), key);
    const passOn = topicMatches(levelBindingPattern(level, 0), key);
    expect(intoQueue).not.toBe(passOn);
    if (intoQueue) total += levelTtlMs(level);
  }
  return total;
}

describe('delay levels', () => {
  it.each([
    [0, 0],
    [49, 0],
    [50, 100],
    [100, 100],
    [1234, 1200],
    [60_000, 60_000],
    [86_400_000, 86_400_000],
  ])(
    'a drawn delay of %i ms waits %i ms in the levels, exactly its binary decomposition',
    (delay, expected) => {
      expect(quantiseDelay(delay)).toBe(expected);
      expect(waitThroughLevels(delay)).toBe(expected);
    },
  );

  it.each([0, 100, 1200, 60_000, 86_400_000])(
    'reads a delay of %i ms back from its routing key, and nothing from a key that is not a delay',
    (delay) => {
      expect(delayOfRoutingKey(delayRoutingKey(delay))).toBe(delay);
      expect(delayOfRoutingKey('order.placed')).toBeUndefined();
      expect(delayOfRoutingKey(delayRoutingKey(delay).replace(/.$/, '2'))).toBeUndefined();
    },
  );

  it('never waits longer than the levels hold', () => {
    const longest = (2 ** DELAY_LEVELS - 1) * DELAY_RESOLUTION_MS;
    expect(quantiseDelay(10 * longest)).toBe(longest);
    expect(waitThroughLevels(10 * longest)).toBe(longest);
    expect(delayRoutingKey(10 * longest)).toBe(Array(DELAY_LEVELS).fill('1').join('.'));
  });

  it('keeps the full jitter uniform: every 100 ms step of a range is reachable with one routing key each', () => {
    const keys = new Set<string>();
    for (let delay = 0; delay <= 3_200; delay += DELAY_RESOLUTION_MS) keys.add(delayRoutingKey(delay));
    expect(keys.size).toBe(33);
  });

  it.each([
    [0, 1, 'events.retry.deliver'],
    [100, 1, 'events.retry.00'],
    [300, 2, 'events.retry.01'],
    [60_000, 10, 'events.retry.09'],
    [60_100, 10, 'events.retry.09'],
    [86_400_000, 20, 'events.retry.19'],
  ])('a delay of %i ms needs %i level(s) and enters at %s', (delay, levels, entry) => {
    expect(levelsFor(delay)).toBe(levels);
    expect(delayEntryExchange('events', delay)).toBe(entry);
  });

  it('names levels under the exchange, highest first', () => {
    expect(delayLevelName('events', 3)).toBe('events.retry.03');
    expect(delayLevelNames('events')[0]).toBe('events.retry.19');
    expect(delayLevelNames('events')).toHaveLength(DELAY_LEVELS);
  });
});
