import { describe, expect, it } from '@jest/globals';
import { FakeReceiptClient } from './fake-receipt-client';
import { ReceiptServiceUnavailableError } from './receipt-service-unavailable.error';

const REQUEST = { orderId: 'o-1', customerId: 'c-1', amountCents: 1999 };

describe('FakeReceiptClient', () => {
  it('sends one receipt per idempotency key and answers a repeated call with the first receipt', async () => {
    const client = new FakeReceiptClient({ latencyMs: 0 });

    const first = await client.send(REQUEST, { idempotencyKey: 'receipt:o-1' });
    const again = await client.send(REQUEST, { idempotencyKey: 'receipt:o-1' });
    const other = await client.send({ ...REQUEST, orderId: 'o-2' }, { idempotencyKey: 'receipt:o-2' });

    expect(again).toBe(first);
    expect(other.receiptId).not.toBe(first.receiptId);
    expect(client.stats).toEqual({ calls: 3, sent: 2, duplicates: 1, failures: 0 });
  });

  it('fails the forced number of calls transiently, then succeeds with the same key', async () => {
    const client = new FakeReceiptClient({ latencyMs: 0 });
    client.failNext(2);

    for (let attempt = 1; attempt <= 2; attempt++) {
      await expect(client.send(REQUEST, { idempotencyKey: 'k' })).rejects.toBeInstanceOf(
        ReceiptServiceUnavailableError,
      );
    }
    await expect(client.send(REQUEST, { idempotencyKey: 'k' })).resolves.toMatchObject({
      receiptId: expect.stringMatching(/^rcpt_/),
    });
    expect(client.stats).toEqual({ calls: 3, sent: 1, duplicates: 0, failures: 2 });
  });

  it("fails only the named order's calls when the failures are for one order", async () => {
    const client = new FakeReceiptClient({ latencyMs: 0 });
    client.failNext(1, 'order-b');

    const other = await client.send(
      { ...REQUEST, orderId: 'order-a' },
      { idempotencyKey: 'receipt:order-a' },
    );
    await expect(
      client.send({ ...REQUEST, orderId: 'order-b' }, { idempotencyKey: 'receipt:order-b' }),
    ).rejects.toBeInstanceOf(ReceiptServiceUnavailableError);
    const retried = await client.send(
      { ...REQUEST, orderId: 'order-b' },
      { idempotencyKey: 'receipt:order-b' },
    );

    expect(client.sentUnder('receipt:order-a')).toEqual(other);
    expect(client.sentUnder('receipt:order-b')).toEqual(retried);
    expect(client.stats).toEqual({ calls: 3, sent: 2, duplicates: 0, failures: 1 });
  });

  it.each([
    [0, 0.0, 0],
    [0.3, 0.29, 1],
    [0.3, 0.3, 0],
    [1, 0.99, 1],
  ])(
    'with failure rate %p and a random draw of %p, fails %p time(s)',
    async (failureRate, draw, failures) => {
      const client = new FakeReceiptClient({ latencyMs: 0, failureRate, random: () => draw });

      await client.send(REQUEST, { idempotencyKey: 'k' }).catch(() => undefined);

      expect(client.stats.failures).toBe(failures);
    },
  );

  it('takes between half and one and a half times its latency', async () => {
    const client = new FakeReceiptClient({ latencyMs: 40, random: () => 0.5 });
    const started = performance.now();

    await client.send(REQUEST, { idempotencyKey: 'k' });

    expect(performance.now() - started).toBeGreaterThanOrEqual(38);
  });

  it('stops waiting and rejects with the reason when the call is aborted', async () => {
    const client = new FakeReceiptClient({ latencyMs: 10_000 });
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(new Error('shutting down')), 10);

    await expect(client.send(REQUEST, { idempotencyKey: 'k', signal: controller.signal })).rejects.toThrow(
      'shutting down',
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(client.stats.sent).toBe(0);
  });

  it('forgets the oldest keys beyond its memory', async () => {
    const client = new FakeReceiptClient({ latencyMs: 0, rememberedKeys: 2 });
    const first = await client.send(REQUEST, { idempotencyKey: 'a' });
    await client.send(REQUEST, { idempotencyKey: 'b' });
    await client.send(REQUEST, { idempotencyKey: 'c' });

    const again = await client.send(REQUEST, { idempotencyKey: 'a' });

    expect(again.receiptId).not.toBe(first.receiptId);
    expect(client.stats).toEqual({ calls: 4, sent: 4, duplicates: 0, failures: 0 });
  });
});
