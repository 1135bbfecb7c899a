import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { RequestInterruptedError } from '../errors/request-interrupted.error';
import { RequestTimeoutError } from '../errors/request-timeout.error';
import { PendingRequests, type RequestDescription } from './pending-requests';

function request(messageId: string, timeoutMs = 1000): RequestDescription {
  return { messageId, messageType: 'price.quote', exchange: 'events', routingKey: 'price.quote', timeoutMs };
}

describe('PendingRequests', () => {
  let pending: PendingRequests;

  beforeEach(() => {
    jest.useFakeTimers();
    pending = new PendingRequests();
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('resolves a request with its reply, once, and clears its timer', async () => {
    const reply = pending.wait(request('a'));

    expect(pending.settle('a', () => ({ ok: true, value: 42 }))).toBe(true);
    expect(pending.settle('a', () => ({ ok: true, value: 43 }))).toBe(false);
    await expect(reply).resolves.toBe(42);
    expect(pending.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('rejects a request with the error its reply carries, or the error reading it threw', async () => {
    const failed = pending.wait(request('a'));
    const unreadable = pending.wait(request('b'));

    pending.settle('a', () => ({ ok: false, error: new Error('remote') }));
    pending.settle('b', () => {
      throw new Error('not JSON');
    });

    await expect(failed).rejects.toThrow('remote');
    await expect(unreadable).rejects.toThrow('not JSON');
  });

  it('times a request out after its remaining time with RequestTimeoutError, and drops its late reply', async () => {
    const reply = pending.wait(request('a', 1000), undefined, 600);

    jest.advanceTimersByTime(599);
    expect(pending.size).toBe(1);
    jest.advanceTimersByTime(1);

    await expect(reply).rejects.toEqual(
      new RequestTimeoutError('price.quote', 'a', 'events', 'price.quote', 1000),
    );
    expect(pending.settle('a', () => ({ ok: true, value: 1 }))).toBe(false);
  });

  it('interrupts every waiting request at once, each with RequestInterruptedError', async () => {
    const replies = [pending.wait(request('a')), pending.wait(request('b'))];

    expect(pending.interruptAll('the reply channel closed')).toBe(2);

    for (const [i, reply] of replies.entries()) {
      await expect(reply).rejects.toEqual(
        new RequestInterruptedError('price.quote', ['a', 'b'][i], 'the reply channel closed'),
      );
    }
    expect(pending.size).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it("stops waiting when the caller's signal aborts, with its reason", async () => {
    const abort = new AbortController();
    const reply = pending.wait(request('a'), abort.signal);

    abort.abort(new Error('unsubscribed'));

    await expect(reply).rejects.toThrow('unsubscribed');
    expect(pending.size).toBe(0);
    await expect(pending.wait(request('b'), abort.signal)).rejects.toThrow('unsubscribed');
  });
});
