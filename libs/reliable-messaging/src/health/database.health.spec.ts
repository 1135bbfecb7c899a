import { afterAll, describe, expect, it } from '@jest/globals';
import { HealthIndicatorService } from '@nestjs/terminus';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { DatabaseAvailability } from '../database/database-availability.service';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboxMonitor } from '../outbox/outbox-monitor.service';
import { DatabaseHealthIndicator } from './database.health';
import { describeFailure } from './failure-description';
import { OutboxHealthIndicator } from './outbox.health';

// Nothing listens on port 1: node-postgres fails with its own error, `connect ECONNREFUSED 127.0.0.1:1`.
const pool = new pg.Pool({ host: '127.0.0.1', port: 1, user: 'orders', password: 's3cret', max: 1 });
const dataSource = { query: (sql: string) => pool.query(sql) } as unknown as DataSource;
const options = { dataSource, probeTimeoutMs: 5_000 } as ResolvedMessagingOptions;

/** Whatever a health body must not show: a host, a port, a user, a password or a URL. */
const LEAKS = /127\.0\.0\.1|:1\b|orders|s3cret|:\/\//;

describe('health output while the database is unreachable', () => {
  afterAll(() => pool.end());

  it('says the database is unreachable in its own words, without the host, port or user the driver names', async () => {
    const indicator = new DatabaseHealthIndicator(
      options,
      new HealthIndicatorService(),
      new DatabaseAvailability(options),
    );

    const result = await indicator.isHealthy();

    expect(result.database).toEqual({ status: 'down', message: 'database unreachable (ECONNREFUSED)' });
    expect(JSON.stringify(result)).not.toMatch(LEAKS);
  });

  it('says the outbox backlog is unreadable in the same words', async () => {
    const outbox = { backlog: () => pool.query('SELECT 1') } as unknown as OutboxMonitor;
    const indicator = new OutboxHealthIndicator(options, new HealthIndicatorService(), outbox);

    const result = await indicator.isHealthy();

    expect(result.outbox).toEqual({
      status: 'down',
      message: 'outbox backlog unreadable: database unreachable (ECONNREFUSED)',
    });
    expect(JSON.stringify(result)).not.toMatch(LEAKS);
  });
});

describe('describeFailure', () => {
  it.each([
    [
      'a SQLSTATE naming the user',
      Object.assign(new Error('password authentication failed for user "orders"'), { code: '28P01' }),
      'database refused the check (SQLSTATE 28P01)',
    ],
    [
      "TypeORM's wrapper around the driver's error",
      Object.assign(new Error('select failed'), {
        driverError: Object.assign(new Error('terminating connection due to administrator command'), {
          code: '57P01',
        }),
      }),
      'database refused the check (SQLSTATE 57P01)',
    ],
    [
      'an AggregateError of one refusal per address',
      new AggregateError([
        Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' }),
      ]),
      'database unreachable (ECONNREFUSED)',
    ],
    [
      'a name that does not resolve',
      Object.assign(new Error('getaddrinfo ENOTFOUND db.internal'), { code: 'ENOTFOUND' }),
      'database unreachable (ENOTFOUND)',
    ],
    [
      'an error without a code',
      new Error('Connection terminated unexpectedly to postgres://orders:s3cret@db'),
      'database check failed (Error)',
    ],
  ])('describes %s without its message', (_case, error, expected) => {
    expect(describeFailure('database', error)).toBe(expected);
  });
});
