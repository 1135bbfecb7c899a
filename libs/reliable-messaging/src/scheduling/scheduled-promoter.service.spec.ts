import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboxRelay } from '../outbox/outbox-relay.service';
import { PROMOTE_BATCH, ScheduledPromoter } from './scheduled-promoter.service';
import type { Promotion, ScheduledStore } from './scheduled-store.service';

/** A DataSource the promoter's listener cannot reach: it logs, backs off, and is stopped with the promoter. */
const unreachable = {
  createQueryRunner: () => ({
    connect: () => Promise.reject(new Error('no database in this spec')),
    isReleased: true,
    release: () => Promise.resolve(),
  }),
} as unknown as DataSource;

/** A promoter over a store whose promotions answer from `answers` in turn (the last one repeats). */
function promoterWith(answers: Array<Promotion | Error>, pollIntervalMs = 60_000) {
  const calls: number[] = [];
  let wakes = 0;
  const store = {
    promote: async () => {
      calls.push(Date.now());
      const answer = answers[Math.min(calls.length - 1, answers.length - 1)];
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as ScheduledStore;
  const relay = { enabled: true, wake: () => wakes++ } as unknown as OutboxRelay;
  const options = { dataSource: unreachable, outbox: { pollIntervalMs } } as ResolvedMessagingOptions;
  const promoter = new ScheduledPromoter(options, store, relay);
  return { promoter, calls, wakes: () => wakes };
}

const until = async (condition: () => boolean, timeoutMs = 2000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('ScheduledPromoter', () => {
  let running: ScheduledPromoter | undefined;

  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  afterAll(() => {
    Logger.overrideLogger(new Logger());
  });

  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  it('sleeps until the next row is due, then promotes it and wakes the relay', async () => {
    const { promoter, calls, wakes } = promoterWith([{ promoted: 0, nextDueInMs: 150 }, { promoted: 1 }]);
    running = promoter;
    const started = Date.now();
    promoter.start();

    await until(() => calls.length === 2);
    expect(calls[1] - started).toBeGreaterThanOrEqual(140);
    expect(wakes()).toBe(1);
    expect(promoter.stats.promoted).toBe(1);
  });

  it('goes again at once after a full batch', async () => {
    const { promoter, calls } = promoterWith([{ promoted: PROMOTE_BATCH }, { promoted: 3 }]);
    running = promoter;
    promoter.start();

    await until(() => calls.length === 2);
    expect(calls[1] - calls[0]).toBeLessThan(500);
    expect(promoter.stats.promoted).toBe(PROMOTE_BATCH + 3);
  });

  it('wakes earlier for a row announced due sooner than its sleep, and not for a later one', async () => {
    const { promoter, calls } = promoterWith([{ promoted: 0 }]);
    running = promoter;
    promoter.start();
    await until(() => calls.length === 1);

    promoter.expect(Date.now() + 10 * 60_000);
    const announced = Date.now() + 100;
    promoter.expect(announced);

    await until(() => calls.length === 2);
    expect(calls[1]).toBeGreaterThanOrEqual(announced - 5);
  });

  it('looks again after a promotion during which a row was announced, which its snapshot may have missed', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls: number[] = [];
    const store = {
      promote: async () => {
        calls.push(Date.now());
        if (calls.length === 1) await gate;
        return { promoted: 0 };
      },
    } as unknown as ScheduledStore;
    const promoter = new ScheduledPromoter(
      { dataSource: unreachable, outbox: { pollIntervalMs: 60_000 } } as ResolvedMessagingOptions,
      store,
      { enabled: true, wake: () => undefined } as unknown as OutboxRelay,
    );
    running = promoter;
    promoter.start();
    await until(() => calls.length === 1);

    promoter.expect(Date.now() + 50);
    release();

    await until(() => calls.length === 2, 1000);
  });

  it('backs off after a failed promotion and goes on', async () => {
    const { promoter, calls } = promoterWith([new Error('connection refused'), { promoted: 1 }]);
    running = promoter;
    promoter.start();

    await until(() => calls.length === 2);
    expect(promoter.stats.promoted).toBe(1);
  });

  it('stops at once while it sleeps', async () => {
    const { promoter, calls } = promoterWith([{ promoted: 0 }]);
    promoter.start();
    await until(() => calls.length === 1);

    const started = Date.now();
    await promoter.stop();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(calls).toHaveLength(1);
  });
});
