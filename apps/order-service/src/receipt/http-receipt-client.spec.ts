import { describe, expect, it } from '@jest/globals';
import { NonRetryableError } from 'nestjs-reliable-messaging';
import { HttpReceiptClient } from './http-receipt-client';
import { ReceiptServiceUnavailableError } from './receipt-service-unavailable.error';

const REQUEST = { orderId: 'o-1', customerId: 'c-1', amountCents: 1999 };

/** A fetch that records its calls and answers with `status` and `body`. */
function fakeFetch(status: number, body: unknown) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const impl = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return new Response(typeof body === 'string' ? body : JSON.stringify(body), { status });
  }) as unknown as typeof fetch;
  return { impl, calls };
}

describe('HttpReceiptClient', () => {
  it('posts the request with the idempotency key and the signal, and reads the receipt', async () => {
    const { impl, calls } = fakeFetch(201, { receiptId: 'rcpt_1', sentAt: '2026-01-02T03:04:05.000Z' });
    const signal = new AbortController().signal;

    const receipt = await new HttpReceiptClient('http://receipts', impl).send(REQUEST, {
      idempotencyKey: 'receipt:o-1',
      signal,
    });

    expect(receipt).toEqual({ receiptId: 'rcpt_1', sentAt: new Date('2026-01-02T03:04:05.000Z') });
    expect(calls).toHaveLength(1);
    expect(calls[0].url).toBe('http://receipts/receipts');
    expect(calls[0].init).toMatchObject({
      method: 'POST',
      headers: { 'idempotency-key': 'receipt:o-1' },
      body: JSON.stringify(REQUEST),
      signal,
    });
  });

  it.each([
    [503, 'a 5xx', ReceiptServiceUnavailableError],
    [429, 'a 429', ReceiptServiceUnavailableError],
    [400, 'any other refusal', NonRetryableError],
  ])('treats %p (%s) as %p', async (status, _what, errorClass) => {
    const { impl } = fakeFetch(status, 'nope');

    await expect(
      new HttpReceiptClient('http://receipts', impl).send(REQUEST, { idempotencyKey: 'k' }),
    ).rejects.toBeInstanceOf(errorClass);
  });

  it('treats an unreachable service as transient', async () => {
    const impl = (async () => {
      throw new TypeError('fetch failed');
    }) as unknown as typeof fetch;

    await expect(
      new HttpReceiptClient('http://receipts', impl).send(REQUEST, { idempotencyKey: 'k' }),
    ).rejects.toBeInstanceOf(ReceiptServiceUnavailableError);
  });

  it('rejects with the abort reason when the handler signal aborts the call', async () => {
    const controller = new AbortController();
    const impl = ((_url: string, init: RequestInit) =>
      new Promise((_resolve, reject) =>
        init.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))),
      )) as unknown as typeof fetch;
    const call = new HttpReceiptClient('http://receipts', impl).send(REQUEST, {
      idempotencyKey: 'k',
      signal: controller.signal,
    });

    controller.abort(new Error('deadline'));

    await expect(call).rejects.toThrow('deadline');
  });
});
