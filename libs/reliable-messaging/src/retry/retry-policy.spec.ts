import { describe, expect, it } from '@jest/globals';
import { ConfigurationError } from '../errors/configuration.error';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { ManualSettlementError } from '../errors/manual-settlement.error';
import { NonRetryableError } from '../errors/non-retryable.error';
import { RedeliveryLimitError } from '../errors/redelivery-limit.error';
import { RetryPolicy } from './retry-policy';
import { mergeRetryOptions, resolveRetryOptions } from '../options/retry.options';

class PaymentDeclined extends Error {}
class OutOfStock extends Error {}
class Timeout extends Error {}

function policy(random = 0.5, overrides = {}): RetryPolicy {
  return new RetryPolicy(
    mergeRetryOptions(
      resolveRetryOptions({
        nonRetryableErrors: [PaymentDeclined],
        isRetryable: (e) => !(e instanceof OutOfStock),
      }),
      overrides,
      'Spec.handler retry',
    ),
    () => random,
  );
}

describe('RetryPolicy', () => {
  it.each([
    ['a NonRetryableError', new NonRetryableError('no'), 'non-retryable'],
    [
      'an InvalidMessageError, with its own reason',
      new InvalidMessageError('malformed-json', 'bad'),
      'malformed-json',
    ],
    ['a redelivery limit', new RedeliveryLimitError(6), 'redelivery-limit'],
    ['an ack or nack made by hand', new ManualSettlementError('Spec.handler', 'ack'), 'manual-settlement'],
    ['a configured error class', new PaymentDeclined('declined'), 'non-retryable'],
    ['an error the predicate refuses', new OutOfStock('none left'), 'non-retryable'],
  ])('dead-letters %s at once', (_what, error, reason) => {
    expect(policy().decide(error, 1)).toEqual({ action: 'dead-letter', reason });
  });

  it('retries anything else until maxAttempts, then dead-letters it as attempts-exhausted', () => {
    const p = policy();
    for (let attempt = 1; attempt < 12; attempt++) {
      expect(p.decide(new Timeout('slow'), attempt)).toMatchObject({
        action: 'retry',
        nextAttempt: attempt + 1,
      });
    }
    expect(p.decide(new Timeout('slow'), 12)).toEqual({
      action: 'dead-letter',
      reason: 'attempts-exhausted',
    });
    expect(p.decide('a thrown string', 1)).toMatchObject({ action: 'retry' });
  });

  it('counts a predicate that throws as retryable', () => {
    const p = new RetryPolicy(
      resolveRetryOptions({
        isRetryable: () => {
          throw new Error('bug in the predicate');
        },
      }),
    );
    expect(p.decide(new Error('x'), 1)).toMatchObject({ action: 'retry' });
  });

  it.each([
    [0, [500, 1000, 2000, 4000, 8000, 16000]],
    [0.5, [800, 1500, 3000, 6000, 12000, 24000]],
    [0.9999, [1000, 2000, 4000, 8000, 16000, 32000]],
  ])('draws equal jitter between half a doubling ceiling and all of it (random %f)', (random, expected) => {
    const p = policy(random);
    expect([2, 3, 4, 5, 6, 7].map((next) => p.delayBefore(next))).toEqual(expected);
    expect([2, 3, 4, 5, 6, 7].map((next) => p.ceilingBefore(next))).toEqual([
      1000, 2000, 4000, 8000, 16000, 32000,
    ]);
  });

  it('spends between 5 and 10 minutes on retries with the defaults, so a 5-minute outage is outlasted', () => {
    const total = (random: number) => {
      const p = policy(random);
      let sum = 0;
      for (let next = 2; next <= p.options.maxAttempts; next++) sum += p.delayBefore(next);
      return sum;
    };
    expect(total(0)).toBeGreaterThanOrEqual(300_000);
    expect(total(0.9999)).toBeLessThanOrEqual(610_000);
  });

  it('caps the ceiling at maxDelayMs', () => {
    const p = policy(0.9999, { maxAttempts: 20, initialDelayMs: 1000, maxDelayMs: 5000 });
    expect([2, 4, 8, 20].map((next) => p.delayBefore(next))).toEqual([1000, 4000, 5000, 5000]);
  });

  it("lets a consumer's numbers replace the module's and its error classes add to them", () => {
    const merged = mergeRetryOptions(
      resolveRetryOptions({ maxAttempts: 3, nonRetryableErrors: [PaymentDeclined] }),
      { initialDelayMs: 200, nonRetryableErrors: [OutOfStock] },
      'Spec.handler retry',
    );
    expect(merged).toMatchObject({
      maxAttempts: 3,
      initialDelayMs: 200,
      maxDelayMs: 120_000,
      maxRedeliveries: 5,
    });
    expect(merged.nonRetryableErrors).toEqual([PaymentDeclined, OutOfStock]);
  });

  it.each([
    [{ maxAttempts: 0 }, "'retry.maxAttempts' must be an integer from 1 to 100, got 0"],
    [{ initialDelayMs: -1 }, "'retry.initialDelayMs' must be an integer from 0 to 86400000, got -1"],
    [
      { initialDelayMs: 5000, maxDelayMs: 1000 },
      "'retry.maxDelayMs' must be an integer from 5000 to 86400000, got 1000",
    ],
    [{ maxDelayMs: 100_000_000 }, "'retry.maxDelayMs' must be an integer from 1000 to 86400000"],
    [{ maxRedeliveries: 1.5 }, "'retry.maxRedeliveries' must be an integer from 0 to 1000"],
    [
      { nonRetryableErrors: ['PaymentDeclined'] },
      "'retry.nonRetryableErrors' must be a list of error classes",
    ],
    [{ isRetryable: true }, "'retry.isRetryable' must be a function"],
  ])('refuses %j at startup with a fix-it message', (options, message) => {
    expect(() => resolveRetryOptions(options as never)).toThrow(ConfigurationError);
    expect(() => resolveRetryOptions(options as never)).toThrow(message);
  });
});
