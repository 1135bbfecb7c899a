import { randomUUID } from 'node:crypto';
import { ReceiptServiceUnavailableError } from './receipt-service-unavailable.error';
import type { Receipt, ReceiptCallOptions, ReceiptClient, ReceiptRequest } from './receipt-client';

/** How the fake behaves. */
export interface FakeReceiptClientOptions {
  /** Mean latency of a call; each call takes 0.5 to 1.5 times this. Default: 20 ms. */
  latencyMs?: number;
  /** Share of calls, from 0 to 1, that fail with ReceiptServiceUnavailableError. Default: 0. */
  failureRate?: number;
  /** Idempotency keys remembered, oldest forgotten first. Default: 100 000. */
  rememberedKeys?: number;
  /** Source of randomness, for tests. Default: Math.random. */
  random?: () => number;
}

/** What the fake has seen, for the demo's summary and for tests. */
export interface FakeReceiptStats {
  /** Every call, failed or not. */
  calls: number;
  /** Receipts actually sent: one per idempotency key. */
  sent: number;
  /** Calls with a key already sent, answered with the first receipt and not sent again. */
  duplicates: number;
  /** Calls failed on purpose with ReceiptServiceUnavailableError. */
  failures: number;
}

/**
 * An in-process stand-in for an external receipt service, behaving like a well-run one: some latency, occasional
 * transient failures, and idempotency keys, so a retried call never sends a second receipt.
 */
export class FakeReceiptClient implements ReceiptClient {
  private readonly latencyMs: number;
  private readonly failureRate: number;
  private readonly rememberedKeys: number;
  private readonly random: () => number;
  private readonly sentByKey = new Map<string, Receipt>();
  private readonly counts: FakeReceiptStats = { calls: 0, sent: 0, duplicates: 0, failures: 0 };
  private failuresToForce = 0;
  private readonly failuresToForceByOrder = new Map<string, number>();

  constructor(options: FakeReceiptClientOptions = {}) {
    this.latencyMs = options.latencyMs ?? 20;
    this.failureRate = options.failureRate ?? 0;
    this.rememberedKeys = options.rememberedKeys ?? 100_000;
    this.random = options.random ?? Math.random;
  }

  get stats(): FakeReceiptStats {
    return { ...this.counts };
  }

  /**
   * Makes the next `count` calls fail transiently, whatever the failure rate; with `orderId`, the next `count`
   * calls for that order only, so receipts of other orders still on their way cannot use them up.
   */
  failNext(count: number, orderId?: string): void {
    if (orderId === undefined) this.failuresToForce += count;
    else this.failuresToForceByOrder.set(orderId, (this.failuresToForceByOrder.get(orderId) ?? 0) + count);
  }

  /** The receipt sent under `idempotencyKey`, if one was (and is still remembered). */
  sentUnder(idempotencyKey: string): Receipt | undefined {
    return this.sentByKey.get(idempotencyKey);
  }

  async send(request: ReceiptRequest, options: ReceiptCallOptions): Promise<Receipt> {
    this.counts.calls++;
    await this.delay(options.signal);
    if (this.takeForcedFailure(request.orderId) || this.random() < this.failureRate) {
      this.counts.failures++;
      throw new ReceiptServiceUnavailableError(
        `receipt service unavailable (order ${request.orderId}); try again`,
      );
    }
    const earlier = this.sentByKey.get(options.idempotencyKey);
    if (earlier) {
      this.counts.duplicates++;
      return earlier;
    }
    const receipt: Receipt = { receiptId: `rcpt_${randomUUID()}`, sentAt: new Date() };
    this.sentByKey.set(options.idempotencyKey, receipt);
    if (this.sentByKey.size > this.rememberedKeys) {
      this.sentByKey.delete(this.sentByKey.keys().next().value as string);
    }
    this.counts.sent++;
    return receipt;
  }

  private takeForcedFailure(orderId: string): boolean {
    const forOrder = this.failuresToForceByOrder.get(orderId) ?? 0;
    if (forOrder > 0) {
      this.failuresToForceByOrder.set(orderId, forOrder - 1);
      return true;
    }
    if (this.failuresToForce === 0) return false;
    this.failuresToForce--;
    return true;
  }

  private delay(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const ms = this.latencyMs * (0.5 + this.random());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', aborted, { once: true });
      function done(): void {
        signal?.removeEventListener('abort', aborted);
        resolve();
      }
      function aborted(): void {
        clearTimeout(timer);
        reject(signal?.reason ?? new Error('aborted'));
      }
    });
  }
}
