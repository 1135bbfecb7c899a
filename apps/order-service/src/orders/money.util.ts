/** The largest unit price accepted, in currency units. */
export const MAX_UNIT_PRICE = 1_000_000;

/** True when `value` is a finite amount from 0 to `max` with at most two decimal places (whole cents). */
export function isCurrencyAmount(value: unknown, max = MAX_UNIT_PRICE): boolean {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > max) return false;
  const cents = value * 100;
  // NOTE: 19.99 * 100 is 1998.9999999999998 in binary floating point; anything closer to a whole cent than
  // this came from a decimal literal with at most two places.
  return Math.abs(cents - Math.round(cents)) < 1e-6;
}

/** Converts a currency amount with at most two decimal places to integer cents; throws on anything else. */
export function toCents(value: number): number {
  if (!isCurrencyAmount(value, Number.MAX_SAFE_INTEGER / 100)) {
    throw new RangeError(`${value} is not an amount of whole cents`);
  }
  return Math.round(value * 100);
}
