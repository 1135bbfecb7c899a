import { describe, expect, it } from '@jest/globals';
import { MemoryInbox } from './memory-inbox';

/** A handler run the test finishes by hand. */
function gate(): { promise: Promise<void>; open: () => void; fail: (error: Error) => void } {
  let open!: () => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

describe('MemoryInbox', () => {
  it('runs a key once, skips it after success, and keeps scopes apart', async () => {
    const inbox = new MemoryInbox();
    const runs: string[] = [];
    const work = (name: string) => async () => {
      runs.push(name);
      await Promise.resolve();
    };

    expect(await inbox.run('billing', 'k1', work('first'))).toBe(true);
    expect(await inbox.run('billing', 'k1', work('again'))).toBe(false);
    expect(await inbox.run('shipping', 'k1', work('other scope'))).toBe(true);
    expect(runs).toEqual(['first', 'other scope']);
  });

  it('forgets a key whose handler failed, as a rolled-back inbox row is gone', async () => {
    const inbox = new MemoryInbox();
    await expect(inbox.run('billing', 'k1', () => Promise.reject(new Error('down')))).rejects.toThrow('down');

    expect(await inbox.run('billing', 'k1', () => Promise.resolve())).toBe(true);
  });

  it.each([
    ['succeeds', false, false],
    ['fails', true, true],
  ])(
    'makes a second delivery of a key still being handled wait: when the first %s, the second runs: %s',
    async (_case, firstFails, secondRuns) => {
      const inbox = new MemoryInbox();
      const first = gate();
      const firstRun = inbox.run('billing', 'k1', () => first.promise);
      let secondStarted = false;
      const secondRun = inbox.run('billing', 'k1', () => {
        secondStarted = true;
        return Promise.resolve();
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(secondStarted).toBe(false);

      if (firstFails) first.fail(new Error('rolled back'));
      else first.open();
      await firstRun.catch(() => undefined);

      expect(await secondRun).toBe(secondRuns);
      expect(secondStarted).toBe(secondRuns);
    },
  );

  it('handles every key again once cleared', async () => {
    const inbox = new MemoryInbox();
    await inbox.run('billing', 'k1', () => Promise.resolve());
    inbox.clear();
    expect(await inbox.run('billing', 'k1', () => Promise.resolve())).toBe(true);
  });
});
