import { describe, expect, it } from '@jest/globals';
import { isCurrencyAmount, toCents } from './money.util';

describe('money', () => {
  it.each([
    [19.99, 1999],
    [0.1, 10],
    [0.29, 29],
    [0.07, 7],
    [5, 500],
    [0, 0],
    [1_000_000, 100_000_000],
  ])('converts %p to %p cents exactly', (amount, cents) => {
    expect(isCurrencyAmount(amount)).toBe(true);
    expect(toCents(amount)).toBe(cents);
  });

  it.each([
    ['a third decimal place', 1.999],
    ['a tiny fraction written in exponent form', 1e-7],
    ['a negative amount', -1],
    ['an amount above the maximum', 1_000_000.01],
    ['NaN', Number.NaN],
    ['infinity', Number.POSITIVE_INFINITY],
    ['a numeric string', '12.50'],
  ])('refuses %s', (_case, value) => {
    expect(isCurrencyAmount(value)).toBe(false);
  });

  it('throws instead of rounding an amount that is not whole cents', () => {
    expect(() => toCents(0.125)).toThrow('0.125 is not an amount of whole cents');
  });
});
