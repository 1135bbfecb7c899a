import { describe, expect, it } from '@jest/globals';
import { MAX_BROKER_DELAY_MS, resolveSchedulingOptions } from '../options/scheduling.options';
import { DELAY_LEVELS, DELAY_RESOLUTION_MS, delayOfRoutingKey } from '../retry/delay-levels';
import {
  CLOCK_SKEW_ALLOWANCE_MS,
  delayTarget,
  deliveredHeaders,
  judgeDelayed,
  MAX_SCHEDULED_HOPS,
  roundUpDelay,
  SCHEDULED_HOPS_HEADER,
} from './broker-delay';

const NOW = Date.parse('2026-12-04T12:00:00.000Z');
const policy = { exchange: 'events', maxDelayMs: 60_000 };

function message(headers: Record<string, unknown>, type: unknown = 'order.placed') {
  return {
    properties: {
      type,
      headers: {
        'rm-original-exchange': 'events',
        'rm-original-routing-key': 'order.placed',
        ...headers,
      },
    },
  } as never;
}

const at = (offsetMs: number): string => new Date(NOW + offsetMs).toISOString();

describe('the broker path of scheduled messages', () => {
  it('holds as long a delay as the levels do', () => {
    expect(MAX_BROKER_DELAY_MS).toBe((2 ** DELAY_LEVELS - 1) * DELAY_RESOLUTION_MS);
  });

  it.each([
    [1, 100],
    [100, 100],
    [101, 200],
    [1499, 1500],
    [0, 100],
  ])('rounds a delay of %i ms up to %i ms, so a message never comes out early', (delay, rounded) => {
    expect(roundUpDelay(delay)).toBe(rounded);
    expect(delayOfRoutingKey(delayTarget('events', delay).routingKey)).toBe(rounded);
  });

  it.each([
    { scenario: 'due now', headers: { 'rm-scheduled-for': at(0) }, kind: 'deliver' },
    { scenario: 'overdue', headers: { 'rm-scheduled-for': at(-3_600_000) }, kind: 'deliver' },
    { scenario: 'not yet due', headers: { 'rm-scheduled-for': at(250) }, kind: 'wait' },
    {
      scenario: 'due within the clock allowance past the maximum',
      headers: { 'rm-scheduled-for': at(60_000 + CLOCK_SKEW_ALLOWANCE_MS) },
      kind: 'wait',
    },
  ])('lets a message $scenario through ($kind)', ({ headers, kind }) => {
    expect(judgeDelayed(message(headers), NOW, policy).kind).toBe(kind);
  });

  it('sends a due message to the module exchange with its type as routing key', () => {
    expect(judgeDelayed(message({ 'rm-scheduled-for': at(-5) }), NOW, policy)).toEqual({
      kind: 'deliver',
      exchange: 'events',
      routingKey: 'order.placed',
      dueAt: NOW - 5,
    });
  });

  it.each([
    { scenario: 'no due time', headers: {}, reason: 'scheduled-header-invalid' },
    {
      scenario: 'a due time of words',
      headers: { 'rm-scheduled-for': 'soon' },
      reason: 'scheduled-header-invalid',
    },
    {
      scenario: 'a numeric due time',
      headers: { 'rm-scheduled-for': NOW },
      reason: 'scheduled-header-invalid',
    },
    {
      scenario: 'a very long due time',
      headers: { 'rm-scheduled-for': `${at(0)}${' '.repeat(100)}` },
      reason: 'scheduled-header-invalid',
    },
    {
      scenario: 'another exchange',
      headers: { 'rm-scheduled-for': at(0), 'rm-original-exchange': 'events.dead-letter' },
      reason: 'scheduled-destination-refused',
    },
    {
      scenario: 'no exchange',
      headers: { 'rm-scheduled-for': at(0), 'rm-original-exchange': undefined },
      reason: 'scheduled-destination-refused',
    },
    {
      scenario: 'a routing key other than the type',
      headers: { 'rm-scheduled-for': at(0), 'rm-original-routing-key': 'payment.refunded' },
      reason: 'scheduled-destination-refused',
    },
    {
      scenario: 'a due time past the maximum and the clock allowance',
      headers: { 'rm-scheduled-for': at(60_000 + CLOCK_SKEW_ALLOWANCE_MS + 1) },
      reason: 'scheduled-delay-too-long',
    },
    {
      scenario: 'too many trips back into the levels',
      headers: { 'rm-scheduled-for': at(1000), [SCHEDULED_HOPS_HEADER]: MAX_SCHEDULED_HOPS },
      reason: 'scheduled-loop',
    },
  ])('refuses a message with $scenario ($reason)', ({ headers, reason }) => {
    const verdict = judgeDelayed(message(headers), NOW, policy);
    expect(verdict).toMatchObject({ kind: 'refuse', reason });
  });

  it('refuses a message without a type, or with an empty one', () => {
    for (const type of [null, '', 42]) {
      expect(judgeDelayed(message({ 'rm-scheduled-for': at(0) }, type), NOW, policy)).toMatchObject({
        kind: 'refuse',
        reason: 'scheduled-destination-refused',
      });
    }
  });

  it('counts the trips back into the levels, ignoring a count that is not one', () => {
    expect(judgeDelayed(message({ 'rm-scheduled-for': at(300) }), NOW, policy)).toEqual({
      kind: 'wait',
      remainingMs: 300,
      hops: 1,
    });
    expect(
      judgeDelayed(message({ 'rm-scheduled-for': at(300), [SCHEDULED_HOPS_HEADER]: 2 }), NOW, policy),
    ).toMatchObject({ hops: 3 });
    expect(
      judgeDelayed(message({ 'rm-scheduled-for': at(300), [SCHEDULED_HOPS_HEADER]: -9 }), NOW, policy),
    ).toMatchObject({ hops: 1 });
  });

  it('delivers with the due time and without the waiting headers', () => {
    expect(
      deliveredHeaders({
        'rm-scheduled-for': at(0),
        'rm-retry-queue': 'events.scheduled',
        'rm-original-exchange': 'events',
        'rm-original-routing-key': 'order.placed',
        [SCHEDULED_HOPS_HEADER]: 1,
        'rm-idempotency-key': 'k',
      }),
    ).toEqual({ 'rm-scheduled-for': at(0), 'rm-idempotency-key': 'k' });
  });

  it('resolves its options: off by default, refused beside a dataSource, bounded by what the levels hold', () => {
    expect(resolveSchedulingOptions(undefined, false)).toEqual({
      brokerDelays: false,
      maxDelayMs: 86_400_000,
    });
    expect(() => resolveSchedulingOptions({ brokerDelays: true }, true)).toThrow(/without a dataSource/);
    expect(() => resolveSchedulingOptions({ maxDelayMs: MAX_BROKER_DELAY_MS + 1 }, false)).toThrow(
      /scheduling\.maxDelayMs/,
    );
    expect(() => resolveSchedulingOptions({ maxDelay: 5 } as never, false)).toThrow(/scheduling\.maxDelayMs/);
  });
});
