import { describe, expect, it } from '@jest/globals';
import { runBounded } from './run-bounded';

describe('runBounded', () => {
  it('runs every index once, never more than the limit at a time', async () => {
    const seen: number[] = [];
    let running = 0;
    let peak = 0;

    await runBounded(25, 4, async (index) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, index % 3));
      seen.push(index);
      running--;
    });

    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(peak).toBe(4);
  });

  it('starts nothing new once aborted', async () => {
    const controller = new AbortController();
    let started = 0;

    await runBounded(
      100,
      2,
      async () => {
        if (++started === 5) controller.abort();
      },
      controller.signal,
    );

    expect(started).toBe(5);
  });
});
