import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type {
  ConsumerRegistry,
  ConsumerStatus,
  DeadLetterMonitor,
  OutboxMonitor,
  QueueDepth,
  QueueDepthMonitor,
  ResolvedMessagingOptions,
} from 'nestjs-reliable-messaging/operations';
import type { DeadLetterOperations } from '../../dead-letter/dead-letter-operations.service';
import type { ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';
import { ConsoleFigures } from './console-figures';

/** A registry whose consumers' counts the test sets, and the depths the broker would report. */
function figures(options: { dataSource?: object; parked?: number | Error } = {}) {
  const statuses: ConsumerStatus[] = [
    { name: 'a', queue: 'billing', consuming: true, inFlight: 2, completed: 0 },
    { name: 'b', queue: 'billing', consuming: true, inFlight: 1, completed: 0 },
    { name: 'c', queue: 'shipping', consuming: true, inFlight: 0, completed: 0 },
  ];
  const depths: QueueDepth[] = [
    { queue: 'billing', ready: 4, consumers: 2, oldestAgeSeconds: 75 },
    { queue: 'shipping', ready: 0, consumers: 1, oldestAgeSeconds: 0 },
  ];
  const outbox = {
    backlog: () =>
      options.parked instanceof Error
        ? Promise.reject(options.parked)
        : Promise.resolve({ pending: 0, oldestAgeSeconds: 0, parked: options.parked ?? 0 }),
  };
  const subject = new ConsoleFigures(
    { snapshot: () => Promise.resolve(depths) } as unknown as QueueDepthMonitor,
    {} as DeadLetterMonitor,
    { knownQueues: () => [] } as unknown as DeadLetterOperations,
    {
      get statuses() {
        return statuses.map((status) => ({ ...status }));
      },
    } as unknown as ConsumerRegistry,
    outbox as unknown as OutboxMonitor,
    { dataSource: options.dataSource } as ResolvedMessagingOptions,
    { maxReadBytesPerRequest: 64 * 2 ** 20 } as ResolvedDeadLetterAdminOptions,
  );
  return { subject, statuses };
}

describe('ConsoleFigures', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-05-01T10:00:00Z') });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('sums the in-flight handlers of a queue, and shows an empty queue as empty rather than 0 s old', async () => {
    const { consumerQueues } = await figures().subject.overview();
    expect(consumerQueues).toEqual([
      expect.objectContaining({ queue: 'billing', inFlight: 3, oldestAgeSeconds: 75 }),
      expect.objectContaining({ queue: 'shipping', inFlight: 0, oldestAgeSeconds: null }),
    ]);
  });

  it('knows no rate on the first overview, the deliveries finished a minute since the previous one after, and keeps it over a quick reload', async () => {
    const { subject, statuses } = figures();
    const rates = async () =>
      (await subject.overview()).consumerQueues.map((queue) => queue.handledPerMinute);
    expect(await rates()).toEqual([undefined, undefined]);

    statuses[0].completed = 20;
    statuses[1].completed = 10;
    statuses[2].completed = 1;
    jest.advanceTimersByTime(30_000);
    expect(await rates()).toEqual([60, 2]);

    statuses[0].completed = 1000;
    jest.advanceTimersByTime(200);
    expect(await rates()).toEqual([60, 2]);

    jest.advanceTimersByTime(60_000);
    expect((await rates())[1]).toBe(0);
  });

  it.each<[string, { dataSource?: object; parked?: number | Error }, unknown]>([
    ['no outbox: no figure', {}, undefined],
    ['an outbox: its parked rows', { dataSource: {}, parked: 3 }, 3],
    [
      'an outbox that cannot be read: why',
      { dataSource: {}, parked: new Error('db down') },
      { error: 'db down' },
    ],
  ])('parked outbox rows with %s', async (_case, options, expected) => {
    expect((await figures(options).subject.overview()).parkedOutboxRows).toEqual(expected);
  });
});
