import { describe, expect, it } from '@jest/globals';
import { enteredQueueAt, QueueAgeEstimator, type QueueAgeSample } from './queue-age';

const T = 1_800_000_000_000;
const s = (seconds: number) => seconds * 1000;

/** One passive-declare reading: when, what the broker said, and what the consumer knew then. */
interface Reading {
  at: number;
  ready: number | undefined;
  consumers?: number;
  sample?: QueueAgeSample;
}

describe('QueueAgeEstimator', () => {
  it.each<{ scenario: string; readings: Reading[]; expected: number }>([
    {
      scenario: 'an empty queue with nothing held reads 0',
      readings: [{ at: T, ready: 0, consumers: 1 }],
      expected: 0,
    },
    {
      scenario: 'a missing queue reads 0',
      readings: [{ at: T, ready: undefined }],
      expected: 0,
    },
    {
      scenario: 'a held delivery gives its exact age, whatever waits behind it',
      readings: [
        {
          at: T,
          ready: 5,
          consumers: 1,
          sample: { oldestHeldAt: T - s(90), lastDeliveredAt: T - s(10), lastReceivedAt: T - s(1) },
        },
      ],
      expected: 90,
    },
    {
      scenario:
        'ready messages count from the last one taken since the previous reading (they were published after it)',
      readings: [
        { at: T - s(15), ready: 3, consumers: 1 },
        { at: T, ready: 3, consumers: 1, sample: { lastDeliveredAt: T - s(40), lastReceivedAt: T - s(2) } },
      ],
      expected: 40,
    },
    {
      scenario:
        'a last delivery before the previous reading says nothing about ready messages others consume',
      readings: [
        { at: T - s(15), ready: 3, consumers: 2 },
        {
          at: T,
          ready: 3,
          consumers: 2,
          sample: { lastDeliveredAt: T - s(600), lastReceivedAt: T - s(500) },
        },
      ],
      expected: 0,
    },
    {
      scenario: 'with no consumer anywhere, the time since first seen with messages ready (a lower bound)',
      readings: [
        { at: T - s(45), ready: 1, consumers: 0 },
        { at: T - s(20), ready: 4, consumers: 0 },
        {
          at: T,
          ready: 4,
          consumers: 0,
          sample: { lastDeliveredAt: T - s(600), lastReceivedAt: T - s(500) },
        },
      ],
      expected: 45,
    },
    {
      scenario: 'a run of readings with messages ready starts again after an empty one',
      readings: [
        { at: T - s(100), ready: 1, consumers: 0 },
        { at: T - s(50), ready: 0, consumers: 0 },
        { at: T - s(20), ready: 1, consumers: 0 },
        { at: T, ready: 1, consumers: 0 },
      ],
      expected: 20,
    },
    {
      scenario: 'the older of a held delivery and the ready estimate wins',
      readings: [
        {
          at: T,
          ready: 1,
          consumers: 1,
          sample: { oldestHeldAt: T - s(5), lastDeliveredAt: T - s(60), lastReceivedAt: T - s(1) },
        },
      ],
      expected: 60,
    },
  ])('$scenario', ({ readings, expected }) => {
    const estimator = new QueueAgeEstimator();
    let age = Number.NaN;
    for (const reading of readings) age = estimator.estimate(reading.at, reading, reading.sample ?? {});
    expect(age).toBe(expected);
  });

  it('never reports a negative age for a timestamp ahead of the clock', () => {
    expect(new QueueAgeEstimator().estimate(T, { ready: 0 }, { oldestHeldAt: T + s(2) })).toBe(0);
  });
});

describe('enteredQueueAt', () => {
  it.each([
    { timestamp: 1_800_000_000, expected: 1_800_000_000_000 },
    { timestamp: undefined, expected: undefined },
    { timestamp: '1800000000', expected: undefined },
    { timestamp: Number.NaN, expected: undefined },
  ])('reads timestamp $timestamp as $expected', ({ timestamp, expected }) => {
    expect(enteredQueueAt({ timestamp } as never)).toBe(expected);
  });

  it('takes the time a retry came back from its delay level (the newest x-death entry), not its first publish', () => {
    const headers = {
      'x-death': [
        { queue: 'events.retry.03', reason: 'expired', time: { '!': 'timestamp', value: 1_800_000_090 } },
        { queue: 'events.retry.01', reason: 'expired', time: { '!': 'timestamp', value: 1_800_000_030 } },
      ],
    };
    expect(enteredQueueAt({ timestamp: 1_800_000_000, headers: headers as never })).toBe(1_800_000_090_000);
  });

  it('takes the time an operator replayed a dead letter', () => {
    const headers = { 'rm-dead-letter-replayed-at': '2027-01-15T10:00:00.000Z' };
    expect(enteredQueueAt({ timestamp: 1_700_000_000, headers })).toBe(
      Date.parse('2027-01-15T10:00:00.000Z'),
    );
  });

  it('keeps the publish time when a header holds nothing it can read', () => {
    const headers = { 'x-death': ['not an entry'], 'rm-dead-letter-replayed-at': 'yesterday' };
    expect(enteredQueueAt({ timestamp: 1_800_000_000, headers: headers as never })).toBe(1_800_000_000_000);
  });
});
