import { describe, expect, it } from '@jest/globals';
import { fullJitterDelay, sleep } from './backoff';

describe('fullJitterDelay', () => {
  it.each([
    [1, 250],
    [2, 500],
    [3, 1000],
    [6, 8000],
    [7, 15_000],
    [40, 15_000],
    [10_000, 15_000],
  ])('draws attempt %d from [0, %d) with base 250 ms and cap 15000 ms', (attempt, ceiling) => {
    expect(fullJitterDelay(attempt, 250, 15_000, () => 0)).toBe(0);
    expect(fullJitterDelay(attempt, 250, 15_000, () => 0.5)).toBe(Math.floor(ceiling / 2));
    expect(fullJitterDelay(attempt, 250, 15_000, () => 0.999999)).toBe(ceiling - 1);
  });

  it('treats attempt 0 and below like the first attempt', () => {
    expect(fullJitterDelay(0, 100, 1000, () => 0.999999)).toBe(99);
    expect(fullJitterDelay(-5, 100, 1000, () => 0.999999)).toBe(99);
  });

  it('spreads delays over the whole range with the real random source', () => {
    const delays = Array.from({ length: 2000 }, () => fullJitterDelay(5, 100, 10_000));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThan(1600);
    expect(delays.filter((d) => d < 400)).not.toHaveLength(0);
    expect(delays.filter((d) => d >= 1200)).not.toHaveLength(0);
  });
});

describe('sleep', () => {
  it('resolves after the delay', async () => {
    const started = Date.now();
    await sleep(30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });

  it('resolves at once when the signal aborts, and when it was aborted before', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 10);
    await sleep(60_000, controller.signal);
    await sleep(60_000, controller.signal);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
