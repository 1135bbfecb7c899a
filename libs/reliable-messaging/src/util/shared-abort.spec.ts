import { getMaxListeners } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import { sleep } from './backoff';
import { sharedAbortController } from './shared-abort';

describe('sharedAbortController', () => {
  // NOTE: Jest's sandbox has a process object of its own, which never sees the real process's warnings, so the
  // limit behind MaxListenersExceededWarning is asserted instead of the warning.
  it("lifts the listener limit Node warns past (10 on a plain AbortController's signal)", () => {
    expect(getMaxListeners(new AbortController().signal)).toBe(10);
    expect(getMaxListeners(sharedAbortController().signal)).toBe(Number.POSITIVE_INFINITY);
  });

  it('wakes every one of 50 waiters on abort', async () => {
    const controller = sharedAbortController();
    const sleeps = Array.from({ length: 50 }, () => sleep(60_000, controller.signal));
    controller.abort();
    await Promise.all(sleeps);
  });
});
