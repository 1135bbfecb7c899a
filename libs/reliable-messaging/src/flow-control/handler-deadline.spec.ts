import { describe, expect, it } from '@jest/globals';
import { HandlerDeadlineExceededError } from '../errors/handler-deadline-exceeded.error';
import { HandlerDeadline } from './handler-deadline';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('HandlerDeadline', () => {
  it('rejects and aborts the handler signal with HandlerDeadlineExceededError when it passes', async () => {
    const abort = new AbortController();
    const deadline = new HandlerDeadline('Billing.onOrderPlaced', 30, Date.now() + 10_000, abort);

    await expect(deadline.expired).rejects.toThrow(
      new HandlerDeadlineExceededError('Billing.onOrderPlaced', 30).message,
    );
    expect(abort.signal.reason).toBeInstanceOf(HandlerDeadlineExceededError);
  });

  it('moves the deadline back on extend(), so a handler that keeps extending outlives the first deadline', async () => {
    const abort = new AbortController();
    const started = Date.now();
    // Steps a third of the deadline apart, so a loaded machine's timer lag cannot let the deadline pass between two.
    const deadline = new HandlerDeadline('Report.build', 300, started + 10_000, abort);
    for (let step = 0; step < 4; step++) {
      await sleep(100);
      deadline.extend(300);
    }
    expect(abort.signal.aborted).toBe(false);
    expect(deadline.deadline.getTime()).toBeGreaterThanOrEqual(started + 400 + 300);
    await expect(deadline.expired).rejects.toBeInstanceOf(HandlerDeadlineExceededError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
  });

  it('never shortens the deadline and never extends past its limit', async () => {
    const abort = new AbortController();
    const limit = Date.now() + 80;
    const deadline = new HandlerDeadline('Report.build', 50, limit, abort);
    const first = deadline.deadline.getTime();

    expect(deadline.extend(1).getTime()).toBe(first);
    expect(deadline.extend(60_000).getTime()).toBe(limit);
    await expect(deadline.expired).rejects.toBeInstanceOf(HandlerDeadlineExceededError);
    expect(Date.now()).toBeGreaterThanOrEqual(limit - 5);
  });

  it('stays silent once cleared', async () => {
    const abort = new AbortController();
    const deadline = new HandlerDeadline('Billing.onOrderPlaced', 20, Date.now() + 10_000, abort);
    let rejected = false;
    deadline.expired.catch(() => (rejected = true));

    deadline.clear();
    await sleep(50);

    expect(rejected).toBe(false);
    expect(abort.signal.aborted).toBe(false);
  });

  it('refuses a negative extension', () => {
    const deadline = new HandlerDeadline(
      'Billing.onOrderPlaced',
      20,
      Date.now() + 10_000,
      new AbortController(),
    );
    expect(() => deadline.extend(-1)).toThrow(RangeError);
    deadline.clear();
  });

  it('still fires a later deadline when an expiry clears another deadline due in the same sweep', async () => {
    const now = Date.now();
    const firstAbort = new AbortController();
    const first = new HandlerDeadline('A.handle', 20, now + 10_000, firstAbort);
    const second = new HandlerDeadline('B.handle', 20, now + 10_000, new AbortController());
    const third = new HandlerDeadline('C.handle', 120, now + 10_000, new AbortController());
    // Due together, so one timer sweeps both; the first's abort listener (as a handler's or the inbox's does,
    // inside the sweep) clears the second.
    second.at = first.at;
    firstAbort.signal.addEventListener('abort', () => second.clear());
    await expect(first.expired).rejects.toBeInstanceOf(HandlerDeadlineExceededError);
    await expect(third.expired).rejects.toBeInstanceOf(HandlerDeadlineExceededError);
  });
});
