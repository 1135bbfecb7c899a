import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { ANONYMOUS_CALLER, type CallerRequest, defaultIdentifyCaller, storedCaller } from './caller-identity';

function request(user: unknown, authorization?: string): CallerRequest {
  return { user, headers: authorization === undefined ? {} : { authorization } } as CallerRequest;
}

const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;

describe('defaultIdentifyCaller', () => {
  it.each([
    ["request.user.sub (a guard's JWT payload)", request({ sub: 'u-1', id: 'other' }), 'principal:u-1'],
    ['request.user.id', request({ id: 42 }), 'principal:42'],
    ['request.user.userId', request({ userId: 'u-3', name: 'x' }), 'principal:u-3'],
    ['the principal before the token', request({ sub: 'u-1' }, 'Bearer t-1'), 'principal:u-1'],
    [
      'a bearer token without a principal',
      request({ name: 'no id' }, 'Bearer t-1'),
      'authorization:Bearer t-1',
    ],
    ['an API key scheme', request(undefined, 'ApiKey k-9'), 'authorization:ApiKey k-9'],
    [
      'the user name of Basic credentials, never the password',
      request(undefined, basic('ann:s3cret')),
      'basic:ann',
    ],
  ])('takes %s', (_case, input, identity) => {
    expect(defaultIdentifyCaller(input)).toBe(identity);
  });

  it('gives one Basic user one identity whatever the password', () => {
    expect(defaultIdentifyCaller(request(undefined, basic('ann:one')))).toBe(
      defaultIdentifyCaller(request(undefined, basic('ann:two'))),
    );
  });

  it.each([
    ['no user and no Authorization header', request(undefined)],
    ['an empty Authorization header', request(undefined, '  ')],
    ['a user without an id, an empty sub or a NaN id', request({ sub: '', id: Number.NaN })],
  ])('finds no identity in %s', (_case, input) => {
    expect(defaultIdentifyCaller(input)).toBeUndefined();
  });
});

describe('storedCaller', () => {
  it('stores SHA-256 of the identity in hex, never the identity', () => {
    const stored = storedCaller('authorization:Bearer secret-token');

    expect(stored).toBe(createHash('sha256').update('authorization:Bearer secret-token').digest('hex'));
    expect(stored).not.toContain('secret-token');
  });

  it.each([undefined, ''])('stores %p as the anonymous caller', (identity) => {
    expect(storedCaller(identity)).toBe(ANONYMOUS_CALLER);
  });

  it('refuses an identity that is not a string, naming identifyCaller', () => {
    expect(() => storedCaller(42)).toThrow('identifyCaller must return a string or undefined, got number');
  });
});
