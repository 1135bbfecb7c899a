import { describe, expect, it } from '@jest/globals';
import { ConcurrencySlots } from './concurrency-slots';

/** A task that runs until `finish()` or `fail()` is called, and records when it started. */
function controlled(started: string[], name: string) {
  let finish!: () => void;
  let fail!: (error: Error) => void;
  const task = () =>
    new Promise<void>((resolve, reject) => {
      started.push(name);
      finish = resolve;
      fail = reject;
    });
  return { task, finish: () => finish(), fail: (error: Error) => fail(error) };
}

describe('ConcurrencySlots', () => {
  it('starts tasks at once up to its limit, in the caller turn, and the rest as slots free up, longest waiting first', async () => {
    const slots = new ConcurrencySlots(2);
    const started: string[] = [];
    const tasks = ['a', 'b', 'c', 'd'].map((name) => controlled(started, name));
    const runs = tasks.map((t) => slots.run(t.task));
    expect(started).toEqual(['a', 'b']);
    expect(slots.active).toBe(2);

    tasks[1].finish();
    await runs[1];
    expect(started).toEqual(['a', 'b', 'c']);
    tasks[0].fail(new Error('boom'));
    await expect(runs[0]).rejects.toThrow('boom');
    expect(started).toEqual(['a', 'b', 'c', 'd']);

    tasks[2].finish();
    tasks[3].finish();
    await Promise.all([runs[2], runs[3]]);
    expect(slots.active).toBe(0);
  });

  it('frees the slot of a task that throws before returning its promise', async () => {
    const slots = new ConcurrencySlots(1);
    await expect(
      slots.run(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    const started: string[] = [];
    const next = controlled(started, 'next');
    const run = slots.run(next.task);
    expect(started).toEqual(['next']);
    next.finish();
    await run;
    expect(slots.active).toBe(0);
  });

  it('keeps its bound over many waiting tasks and runs each once', async () => {
    const slots = new ConcurrencySlots(3);
    let running = 0;
    let highest = 0;
    let ran = 0;
    const task = async () => {
      highest = Math.max(highest, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      ran++;
    };
    await Promise.all(Array.from({ length: 2000 }, () => slots.run(task)));
    expect(highest).toBe(3);
    expect(ran).toBe(2000);
  });

  it('does not grow its waiting queue without bound when tasks keep waiting (more fetched than it runs)', async () => {
    const slots = new ConcurrencySlots(2);
    let largest = 0;
    const task = () => new Promise<void>((resolve) => setImmediate(resolve));
    // A waiting queue that never runs empty: each finished task makes room for one more arrival.
    const runs: Promise<void>[] = Array.from({ length: 10 }, () => slots.run(task));
    for (let n = 0; n < 20_000; n++) {
      await runs[n];
      runs.push(slots.run(task));
      largest = Math.max(largest, slots.waitingCount.held);
    }
    await Promise.all(runs);
    expect(slots.waitingCount.waiting).toBe(0);
    expect(largest).toBeLessThan(3_000);
  });
});
