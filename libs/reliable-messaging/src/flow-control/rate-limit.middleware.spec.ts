import { describe, expect, it } from '@jest/globals';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { rateLimitStage } from './rate-limit.middleware';

describe('rateLimitStage', () => {
  it('is left out of the chain of a consumer without a rate limit', () => {
    expect(rateLimitStage({ rateLimit: undefined })).toBeUndefined();
  });

  it('lets no window of periodMs see more than limit handler starts, and delays the rest rather than dropping them', async () => {
    const PERIOD_MS = 1_000;
    // The limiter spaces starts by when it scheduled them; a start measured late on a busy event loop (the
    // earlier one of a pair) can shorten the gap measured here by that lag, never the schedule itself. Lags of
    // 35 ms were seen on a loaded machine; a limiter that let a window through twice would show gaps near 0.
    const LAG_ALLOWANCE_MS = 200;
    const starts: number[] = [];
    const handler = rateLimitStage({ rateLimit: { limit: 4, periodMs: PERIOD_MS } })!(async () => {
      starts.push(performance.now());
    });
    const began = performance.now();

    await Promise.all(Array.from({ length: 12 }, () => handler({} as InboundDelivery)));

    expect(starts).toHaveLength(12);
    for (let i = 4; i < starts.length; i++) {
      expect(starts[i] - starts[i - 4]).toBeGreaterThanOrEqual(PERIOD_MS - LAG_ALLOWANCE_MS);
    }
    expect(performance.now() - began).toBeGreaterThanOrEqual(2 * PERIOD_MS - LAG_ALLOWANCE_MS);
  });

  it('passes a handler failure on unchanged', async () => {
    const failure = new Error('payment API down');
    const handler = rateLimitStage({ rateLimit: { limit: 1, periodMs: 10 } })!(async () => {
      throw failure;
    });
    await expect(handler({} as InboundDelivery)).rejects.toBe(failure);
  });
});
