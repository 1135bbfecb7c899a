import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { PostgresClaimCheckStore } from './postgres-claim-check.store';

/** How long each statement takes on the stand-in database, in fake time. */
const STATEMENT_MS = 10;

/**
 * A stand-in DataSource on which every statement takes STATEMENT_MS and finds `limit` expired bodies, none kept;
 * it records when each statement was sent.
 */
function slowDatabase(): { dataSource: DataSource; sentAt: number[] } {
  const sentAt: number[] = [];
  let next = 0;
  const dataSource = {
    query: async (sql: string, values: unknown[]) => {
      sentAt.push(performance.now());
      jest.advanceTimersByTime(STATEMENT_MS);
      if (sql.startsWith('DELETE')) return [[], (values[0] as string[]).length];
      return Array.from({ length: values[1] as number }, () => ({
        id: `body-${next++}`,
        at: '2026-01-01 00:00:00+00',
      }));
    },
  } as unknown as DataSource;
  return { dataSource, sentAt };
}

/**
 * The PostgreSQL store's prune shares the database with the app's writes: a round's batches leave it to them as
 * long as each batch took (the scale suite's claim-check case: publishers during a prune of 100,000 bodies).
 */
describe('PostgresClaimCheckStore.deleteExpired, batch after batch', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it("starts a round's next batch no sooner after the last one than that one took", async () => {
    const { dataSource, sentAt } = slowDatabase();
    const store = new PostgresClaimCheckStore(dataSource);
    const keep = new Set<string>();

    expect(await store.deleteExpired(100, new Date(), keep)).toBe(100);
    const firstEnded = performance.now();
    const second = store.deleteExpired(100, new Date(), keep);
    await jest.advanceTimersByTimeAsync(2 * STATEMENT_MS - 1);
    expect(sentAt).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(1);

    expect(await second).toBe(100);
    // The first batch read and deleted (two statements); the second waited as long before its read.
    expect(sentAt.slice(2).map((at) => at - firstEnded)).toEqual([2 * STATEMENT_MS, 3 * STATEMENT_MS]);
  });

  it('starts a new round (another keep set) at once', async () => {
    const { dataSource, sentAt } = slowDatabase();
    const store = new PostgresClaimCheckStore(dataSource);

    await store.deleteExpired(100, new Date(), new Set());
    const firstEnded = performance.now();
    await store.deleteExpired(100, new Date(), new Set());

    expect(sentAt[2]).toBe(firstEnded);
  });
});
