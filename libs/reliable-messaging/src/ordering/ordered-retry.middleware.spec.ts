import { describe, expect, it } from '@jest/globals';
import type { Channel, ConsumeMessage } from 'amqplib';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { NonRetryableError } from '../errors/non-retryable.error';
import { RedeliveryLimitError } from '../errors/redelivery-limit.error';
import { InboundDelivery } from '../pipeline/inbound-delivery';
import { orderedIntake } from '../intake/ordered-intake';
import { RetryPolicy } from '../retry/retry-policy';
import { resolveRetryOptions } from '../options/retry.options';
import {
  brokerDeliveryCount,
  orderedRetryMiddleware,
  type OrderedRetryDependencies,
} from './ordered-retry.middleware';

const consumer = { name: 'Ledger.onEntry', queue: 'ledger.entries', intake: orderedIntake } as ConsumerPlan;

/** Records how the delivery was settled; the broker's side of settling is not what these cases are about. */
function delivery(fields: Partial<ConsumeMessage['fields']> = {}, headers: Record<string, unknown> = {}) {
  const settled: string[] = [];
  const channel = {
    ack: () => settled.push('ack'),
    nack: (_m: unknown, _all: boolean, requeue: boolean) => settled.push(requeue ? 'requeue' : 'reject'),
  } as unknown as Channel;
  const raw = {
    content: Buffer.from('{}'),
    fields: { deliveryTag: 1, redelivered: false, exchange: 'events', routingKey: 'ledger.entry', ...fields },
    properties: { headers },
  } as unknown as ConsumeMessage;
  return { delivery: new InboundDelivery(raw, consumer, channel), settled };
}

function deps(overrides: Partial<OrderedRetryDependencies> = {}) {
  const retried: number[] = [];
  const deadLettered: string[] = [];
  const all: OrderedRetryDependencies = {
    policy: new RetryPolicy(resolveRetryOptions({ maxAttempts: 3, initialDelayMs: 0, maxRedeliveries: 2 })),
    holdLimitMs: 60_000,
    overdueCount: () => 0,
    stopping: new AbortController().signal,
    deadLetter: async (d, _error, reason) => {
      deadLettered.push(reason);
      d.ack();
    },
    recordRetry: (d) => retried.push(d.attempt),
    ...overrides,
  };
  return { deps: all, retried, deadLettered };
}

/** A handler that fails its first `failures` attempts, recording the attempt and the signal each one saw. */
function flaky(failures: number, error: () => unknown = () => new Error('database busy')) {
  const seen: Array<{ attempt: number; signal: AbortSignal }> = [];
  const handler = async (d: InboundDelivery): Promise<void> => {
    seen.push({ attempt: d.attempt, signal: d.abort.signal });
    if (seen.length <= failures) throw error();
  };
  return { handler, seen };
}

describe('orderedRetryMiddleware', () => {
  it('retries a failed attempt in place, with a fresh signal each time, until it succeeds', async () => {
    const { deps: d, retried } = deps();
    const { delivery: inbound, settled } = delivery();
    const { handler, seen } = flaky(2);

    await orderedRetryMiddleware(d)(handler)(inbound);

    expect(seen.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(new Set(seen.map((s) => s.signal)).size).toBe(3);
    expect(retried).toEqual([1, 2]);
    expect(settled).toEqual([]);
  });

  it('passes the failure on once maxAttempts is reached, with the attempt count the failure handler dead-letters on', async () => {
    const { delivery: inbound } = delivery();
    const { handler, seen } = flaky(Infinity);

    await expect(orderedRetryMiddleware(deps().deps)(handler)(inbound)).rejects.toThrow('database busy');

    expect(seen).toHaveLength(3);
    expect(inbound.attempt).toBe(3);
  });

  it('passes a non-retryable failure on at once', async () => {
    const { deps: d, retried } = deps();
    const { delivery: inbound } = delivery();
    const { handler, seen } = flaky(Infinity, () => new NonRetryableError('declined'));

    await expect(orderedRetryMiddleware(d)(handler)(inbound)).rejects.toThrow(NonRetryableError);

    expect(seen).toHaveLength(1);
    expect(retried).toEqual([]);
  });

  it("dead-letters a redelivery past maxRedeliveries by the broker's count, without handling it", async () => {
    const { delivery: inbound } = delivery({ redelivered: true }, { 'x-delivery-count': 3 });
    const { handler, seen } = flaky(0);

    await expect(orderedRetryMiddleware(deps().deps)(handler)(inbound)).rejects.toThrow(RedeliveryLimitError);
    expect(seen).toHaveLength(0);
  });

  it('handles a redelivery within the bound in place, where it is', async () => {
    const { delivery: inbound } = delivery({ redelivered: true }, { 'x-delivery-count': 2 });
    const { handler, seen } = flaky(0);

    await orderedRetryMiddleware(deps().deps)(handler)(inbound);
    expect(seen).toHaveLength(1);
  });

  it('starts the next attempt only once a handler past its deadline has returned', async () => {
    let overdue = 1;
    const { delivery: inbound } = delivery();
    const { handler, seen } = flaky(1);
    const done = orderedRetryMiddleware(deps({ overdueCount: () => overdue }).deps)(handler)(inbound);

    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(seen).toHaveLength(1);
    overdue = 0;
    await done;
    expect(seen).toHaveLength(2);
  });

  it("leaves the delivery for its channel's close to return when shutdown starts during a backoff", async () => {
    const stopping = new AbortController();
    const policy = new RetryPolicy(
      resolveRetryOptions({ maxAttempts: 3, initialDelayMs: 60_000 }),
      () => 0.5,
    );
    const { delivery: inbound, settled } = delivery();
    const { handler, seen } = flaky(Infinity);
    const done = orderedRetryMiddleware(deps({ policy, stopping: stopping.signal }).deps)(handler)(inbound);

    await new Promise((resolve) => setTimeout(resolve, 50));
    stopping.abort();
    await done;

    // A requeue now would hand it straight back to this consumer, which holds the queue until its channel closes.
    expect(seen).toHaveLength(1);
    expect(settled).toEqual([]);
    expect(inbound.leftUnsettled).toBe(true);
  });

  it("dead-letters rather than hold the delivery past the broker's consumer timeout", async () => {
    const { deps: d, deadLettered } = deps({ holdLimitMs: 0 });
    const { delivery: inbound, settled } = delivery();
    const { handler, seen } = flaky(Infinity);

    await orderedRetryMiddleware(d)(handler)(inbound);

    expect(seen).toHaveLength(1);
    expect(deadLettered).toEqual(['attempts-exhausted']);
    expect(settled).toEqual(['ack']);
  });
});

describe('brokerDeliveryCount', () => {
  it.each([
    ['a first delivery, whatever its headers say', false, { 'x-delivery-count': 9 }, 0],
    ['a redelivery the broker counted', true, { 'x-delivery-count': 4 }, 4],
    ['a redelivery from a queue that does not count (classic)', true, {}, 0],
    ['a count of the wrong type', true, { 'x-delivery-count': 'lots' }, 0],
  ])('reads %s', (_what, redelivered, headers, expected) => {
    expect(brokerDeliveryCount(delivery({ redelivered }, headers).delivery.raw)).toBe(expected);
  });
});
