import { describe, expect, it } from '@jest/globals';
import { Semaphore } from './semaphore';

/** A task that records how many tasks ran at once and finishes when `release` is called. */
function tracker(semaphore: Semaphore) {
  let running = 0;
  let peak = 0;
  const releases: Array<() => void> = [];
  const task = (): Promise<void> => {
    running++;
    peak = Math.max(peak, running);
    return new Promise<void>((resolve) => releases.push(resolve)).finally(() => running--);
  };
  return {
    task,
    get peak() {
      return peak;
    },
    get running() {
      return running;
    },
    releaseOne: () => releases.shift()?.(),
    run: () => semaphore.run(task),
  };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Semaphore', () => {
  it('runs at most `limit` tasks at once and starts the waiting ones in arrival order', async () => {
    const semaphore = new Semaphore(2);
    const order: number[] = [];
    const gates: Array<() => void> = [];
    const all = [0, 1, 2, 3, 4].map((n) =>
      semaphore.run(async () => {
        order.push(n);
        await new Promise<void>((resolve) => gates.push(resolve));
      }),
    );
    await tick();
    expect(order).toEqual([0, 1]);
    expect(semaphore.running).toBe(2);

    gates[1]();
    await tick();
    expect(order).toEqual([0, 1, 2]);
    gates[0]();
    await tick();
    expect(order).toEqual([0, 1, 2, 3]);
    gates[2]();
    gates[3]();
    await tick();
    gates[4]();
    await Promise.all(all);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(semaphore.running).toBe(0);
  });

  it('frees the slot of a task that rejects, and passes the rejection on', async () => {
    const semaphore = new Semaphore(1);
    await expect(semaphore.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(semaphore.run(async () => 'next')).resolves.toBe('next');
    expect(semaphore.running).toBe(0);
  });

  it('never exceeds the limit while tasks keep finishing and new ones keep arriving', async () => {
    const semaphore = new Semaphore(4);
    const work = tracker(semaphore);
    const all: Promise<void>[] = [];
    for (let n = 0; n < 50; n++) all.push(work.run());
    let seed = 7;
    for (let n = 0; n < 50; n++) {
      await tick();
      seed = (seed * 48271) % 2147483647;
      if (seed % 3 === 0) all.push(work.run());
      work.releaseOne();
    }
    while (work.running > 0) {
      work.releaseOne();
      await tick();
    }
    await Promise.all(all);
    expect(work.peak).toBe(4);
    expect(semaphore.running).toBe(0);
  });
});
