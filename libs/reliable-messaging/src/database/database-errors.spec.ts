import { describe, expect, it } from '@jest/globals';
import { QueryFailedError } from 'typeorm';
import { databaseOutageEvidence, isDatabaseUnavailableError, sqlStateOf } from './database-errors';

/** A node-postgres DatabaseError as the driver throws it: a message and a SQLSTATE code. */
function pgError(code: string, message = 'error'): Error {
  return Object.assign(new Error(message), { code });
}

describe('isDatabaseUnavailableError', () => {
  it.each<[string, unknown, boolean]>([
    [
      'the backend terminated (pg_terminate_backend)',
      pgError('57P01', 'terminating connection due to administrator command'),
      true,
    ],
    ['the server crashing', pgError('57P02'), true],
    ['the server starting up', pgError('57P03'), true],
    ['a connection exception', pgError('08006'), true],
    ['a serialization failure (a race, not an outage)', pgError('40001'), false],
    ['a deadlock (a race, not an outage)', pgError('40P01'), false],
    ['a statement cancelled at its deadline', pgError('57014'), false],
    ['too many connections', pgError('53300'), true],
    [
      'a refused TCP connection',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      true,
    ],
    ['node-postgres losing the socket', new Error('Connection terminated unexpectedly'), true],
    [
      'a released TypeORM query runner',
      Object.assign(new Error('Query runner already released.'), { name: 'QueryRunnerAlreadyReleasedError' }),
      true,
    ],
    [
      'a TypeORM query runner released when its connection failed',
      Object.assign(
        new Error(
          'Database connection provided by a query runner was already released, cannot continue to use its querying methods anymore.',
        ),
        { name: 'QueryRunnerProviderAlreadyReleasedError' },
      ),
      true,
    ],
    ['TypeORM wrapping a lost connection', new QueryFailedError('SELECT 1', [], pgError('57P01')), true],
    ['an error caused by a lost connection', new Error('saving failed', { cause: pgError('08003') }), true],
    ['a unique violation', pgError('23505', 'duplicate key value violates unique constraint'), false],
    ['a missing table', new QueryFailedError('SELECT 1', [], pgError('42P01')), false],
    ['a business error', new Error('the order is already paid'), false],
    ['a string', 'boom', false],
    ['nothing', undefined, false],
  ])('%s: %s', (_case, error, unavailable) => {
    expect(isDatabaseUnavailableError(error)).toBe(unavailable);
  });
});

describe('databaseOutageEvidence', () => {
  it.each<[string, unknown, 'unavailable' | 'network' | undefined]>([
    ['a terminated backend', pgError('57P01'), 'unavailable'],
    ['node-postgres losing its socket', new Error('Connection terminated unexpectedly'), 'unavailable'],
    [
      'a refused socket, which may be any service',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      'network',
    ],
    [
      "fetch's failure, its cause a refused socket",
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:443'), { code: 'ECONNREFUSED' }),
      }),
      'network',
    ],
    [
      "node-postgres's query_timeout, which a hung link or a slow query causes",
      new QueryFailedError('SELECT 1', [], new Error('Query read timeout')),
      'network',
    ],
    ['a business error', new Error('the order is already paid'), undefined],
  ])('%s: %s', (_case, error, evidence) => {
    expect(databaseOutageEvidence(error)).toBe(evidence);
  });
});

describe('sqlStateOf', () => {
  it.each<[string, unknown, string | undefined]>([
    ['a driver error', pgError('40001'), '40001'],
    ["TypeORM's QueryFailedError over it", new QueryFailedError('UPDATE', [], pgError('40P01')), '40P01'],
    ["a wrapping error's cause", new Error('step failed', { cause: pgError('23505') }), '23505'],
    [
      'a socket error code, which is no SQLSTATE',
      Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
      undefined,
    ],
    [
      'EPIPE, a socket error with the shape of a SQLSTATE',
      Object.assign(new Error('pipe'), { code: 'EPIPE' }),
      undefined,
    ],
    ['an error without a code', new Error('plain'), undefined],
    ['not an error', 'a string', undefined],
  ])('reads %s', (_case, error, state) => {
    expect(sqlStateOf(error)).toBe(state);
  });
});
