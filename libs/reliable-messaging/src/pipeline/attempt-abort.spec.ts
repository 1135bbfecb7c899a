import { describe, expect, it } from '@jest/globals';
import { untilAborted } from '../util/until-aborted';
import { AttemptAbort } from './attempt-abort';

describe('AttemptAbort: how an attempt is abandoned', () => {
  it("aborts a handler's signal taken before, and hands an aborted one to a handler that asks after", () => {
    const before = new AttemptAbort();
    const signal = before.signal;
    const reason = new Error('deadline passed');
    before.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);

    const after = new AttemptAbort();
    after.abort(reason);
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe(reason);
  });

  it('tells each listener once, keeps the first reason, and tells none that was removed', () => {
    const attempt = new AttemptAbort();
    const heard: string[] = [];
    attempt.onAbort(() => heard.push('kept'));
    const remove = attempt.onAbort(() => heard.push('removed'));
    remove();
    attempt.abort('first');
    attempt.abort('second');
    expect(heard).toEqual(['kept']);
    expect(attempt.aborted).toBe(true);
    expect(attempt.reason).toBe('first');
  });

  it('lets untilAborted reject with the reason while the work goes on, and settle with work that ends first', async () => {
    const attempt = new AttemptAbort();
    let finish!: () => void;
    const work = new Promise<void>((resolve) => (finish = resolve));
    let abandoned = 0;
    const waiting = untilAborted(work, attempt, () => abandoned++);
    attempt.abort(new Error('shutdown passed its deadline'));
    await expect(waiting).rejects.toThrow('shutdown passed its deadline');
    expect(abandoned).toBe(1);
    finish();

    const calm = new AttemptAbort();
    await expect(untilAborted(Promise.resolve(7), calm, () => abandoned++)).resolves.toBe(7);
    calm.abort(new Error('too late'));
    expect(abandoned).toBe(1);
  });
});
