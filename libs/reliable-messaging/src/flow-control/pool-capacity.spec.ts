import { describe, expect, it } from '@jest/globals';
import type { DataSource } from 'typeorm';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { databasePoolSize, poolCapacityWarning } from './pool-capacity';

const dataSource = (options: object) => ({ options }) as unknown as DataSource;
const consumers = (...concurrency: number[]) =>
  concurrency.map((c, i) => ({ name: `C${i}.handle`, concurrency: c })) as ConsumerPlan[];

describe('pool capacity', () => {
  it.each([
    [{ type: 'postgres' }, 10],
    [{ type: 'postgres', poolSize: 25 }, 25],
    [{ type: 'postgres', extra: { max: 40 } }, 40],
    [{ type: 'mysql', extra: { connectionLimit: 5 } }, 5],
    [{ type: 'sqlite' }, undefined],
  ])('reads the pool size of %p as %p', (options, size) => {
    expect(databasePoolSize(dataSource(options))).toBe(size);
  });

  it('warns when the consumers together may run more handlers than the pool has connections', () => {
    expect(poolCapacityWarning(consumers(10, 20), dataSource({ type: 'postgres', poolSize: 20 }))).toBe(
      "consumers may run 30 handlers at once (C0.handle 10, C1.handle 20) but the database pool has 20 connections; handlers will wait for a connection and may run past their deadline. Lower 'concurrency' or raise the pool size (poolSize)",
    );
  });

  it('stays silent when the pool is large enough or unknown', () => {
    expect(
      poolCapacityWarning(consumers(10, 10), dataSource({ type: 'postgres', poolSize: 20 })),
    ).toBeUndefined();
    expect(poolCapacityWarning(consumers(100), dataSource({ type: 'sqlite' }))).toBeUndefined();
  });
});
