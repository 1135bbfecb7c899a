import { describe, expect, it } from '@jest/globals';
import { publishedAt, QueueAgeEstimator, type QueueAgeSample } from './queue-age';

const T = 1_800_000_000_000;
const s = (seconds: number) => seconds * 1000;

/** One passive-declare reading: when, how many ready, and what the consumer knew then. */
interface Reading {
  at: number;
  ready: number | undefined;
  sample?: QueueAgeSample;
}

describe('QueueAgeEstimator', () => {
  it.each<{ scenario: string; readings: Reading[]; expected: number }>([
    {
      scenario: 'an empty queue with nothing held reads 0',
      readings: [{ at: T, ready: 0 }],
      expected: 0,
    },
    {
      scenario: 'a missing queue reads 0',
      readings: [{ at: T, ready: undefined }],
      expected: 0,
    },
    {
      scenario: 'a held delivery gives its exact age, whatever waits behind it',
      readings: [{ at: T, ready: 5, sample: { oldestHeldAt: T - s(90), lastDeliveredAt: T - s(10) } }],
      expected: 90,
    },
    {
      scenario: 'ready messages count from the last delivered one (FIFO: they were published after it)',
      readings: [{ at: T, ready: 3, sample: { lastDeliveredAt: T - s(40) } }],
      expected: 40,
    },
    {
      scenario: 'ready messages count from the last empty reading when it is later than the last delivery',
      readings: [
        { at: T - s(30), ready: 0, sample: { lastDeliveredAt: T - s(600) } },
        { at: T, ready: 2, sample: { lastDeliveredAt: T - s(600) } },
      ],
      expected: 30,
    },
    {
      scenario: 'with nothing delivered and never seen empty, the time since first seen non-empty (a lower bound)',
      readings: [
        { at: T - s(45), ready: 1 },
        { at: T - s(20), ready: 4 },
        { at: T, ready: 4 },
      ],
      expected: 45,
    },
    {
      scenario: 'a run of non-empty readings starts again after an empty one',
      readings: [
        { at: T - s(100), ready: 1 },
        { at: T - s(50), ready: 0 },
        { at: T, ready: 1 },
      ],
      expected: 50,
    },
    {
      scenario: 'a held delivery younger than the ready bound does not hide the older ready estimate',
      readings: [{ at: T, ready: 1, sample: { oldestHeldAt: T - s(5), lastDeliveredAt: T - s(60) } }],
      expected: 60,
    },
  ])('$scenario', ({ readings, expected }) => {
    const estimator = new QueueAgeEstimator();
    let age = Number.NaN;
    for (const reading of readings) age = estimator.estimate(reading.at, reading.ready, reading.sample ?? {});
    expect(age).toBe(expected);
  });

  it('never reports a negative age for a timestamp ahead of the clock', () => {
    expect(new QueueAgeEstimator().estimate(T, 0, { oldestHeldAt: T + s(2) })).toBe(0);
  });
});

describe('publishedAt', () => {
  it.each([
    { timestamp: 1_800_000_000, expected: 1_800_000_000_000 },
    { timestamp: undefined, expected: undefined },
    { timestamp: '1800000000', expected: undefined },
    { timestamp: Number.NaN, expected: undefined },
  ])('reads timestamp $timestamp as $expected', ({ timestamp, expected }) => {
    expect(publishedAt({ properties: { timestamp } as never })).toBe(expected);
  });
});
