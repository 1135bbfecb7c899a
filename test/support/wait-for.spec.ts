import { describe, expect, it } from '@jest/globals';
import { waitFor } from './wait-for';

/** A predicate that turns true on its `after`-th call. */
function trueOnCall(after: number): () => boolean {
  let calls = 0;
  return () => ++calls >= after;
}

describe('waitFor', () => {
  it.each([
    ['is already true', () => true],
    ['turns true on the third poll', trueOnCall(3)],
    ['is async and turns true', async () => true],
    [
      'throws twice, then turns true',
      (() => {
        const ready = trueOnCall(3);
        return () => {
          if (!ready()) throw new Error('not yet');
          return true;
        };
      })(),
    ],
  ])('resolves when the predicate %s', async (_scenario, predicate) => {
    await expect(
      waitFor('the thing', predicate, { timeoutMs: 1_000, intervalMs: 1 }),
    ).resolves.toBeUndefined();
  });

  it('rejects after the timeout, naming what it waited for', async () => {
    await expect(waitFor('3 orders applied', () => false, { timeoutMs: 30, intervalMs: 5 })).rejects.toThrow(
      'Timed out after 30 ms waiting for 3 orders applied',
    );
  });

  it('reads a description function at failure time, to report progress', async () => {
    let seen = 0;
    const predicate = () => ++seen > 1_000_000;
    await expect(
      waitFor(() => `orders applied (saw ${seen})`, predicate, { timeoutMs: 30, intervalMs: 5 }),
    ).rejects.toThrow(/waiting for orders applied \(saw [1-9]\d*\)$/);
  });

  it("quotes the predicate's last error when it never succeeded", async () => {
    const predicate = () => {
      throw new Error('connection refused');
    };
    await expect(waitFor('the broker', predicate, { timeoutMs: 30, intervalMs: 5 })).rejects.toThrow(
      'waiting for the broker; last error: connection refused',
    );
  });

  it("stops early with the abort signal's reason", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('the app exited')), 10);
    const started = Date.now();
    await expect(
      waitFor('a line', () => false, { timeoutMs: 5_000, intervalMs: 5, signal: controller.signal }),
    ).rejects.toThrow('the app exited');
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
