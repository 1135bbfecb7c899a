import { describe, expect, it } from '@jest/globals';
import { UnauthorizedException, type ExecutionContext } from '@nestjs/common';
import { ConfigurationError } from 'nestjs-reliable-messaging';
import { ADMIN_ACTOR, AdminAuthGuard } from './admin-auth.guard';
import { resolveAdminOptions } from './dead-letter-admin.options';

const OPS = 'o'.repeat(40);
const CI = 'c'.repeat(32);

function requestWith(authorization?: string): { headers: Record<string, string>; [ADMIN_ACTOR]?: string } {
  return { headers: authorization === undefined ? {} : { authorization } };
}

function contextOf(request: object): ExecutionContext {
  return { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
}

describe('AdminAuthGuard', () => {
  const guard = new AdminAuthGuard(resolveAdminOptions({ tokens: { ops: OPS, ci: CI } }));

  it.each([
    ['ops', `Bearer ${OPS}`],
    ['ci', `bearer ${CI}`],
  ])('lets in a request with the %s token and records the token name as the actor', (name, header) => {
    const request = requestWith(header);
    expect(guard.canActivate(contextOf(request))).toBe(true);
    expect(request[ADMIN_ACTOR]).toBe(`token:${name}`);
  });

  it.each([
    ['no header', undefined],
    ['an empty bearer', 'Bearer '],
    ['a wrong token of the same length', `Bearer ${'x'.repeat(40)}`],
    ['a longer token', `Bearer ${OPS}x`],
    ['the token without its scheme', OPS],
  ])('refuses %s with 401', (_what, header) => {
    expect(() => guard.canActivate(contextOf(requestWith(header)))).toThrow(UnauthorizedException);
  });
});

describe('resolveAdminOptions', () => {
  it.each([
    [{}, "give 'tokens'"],
    [{ tokens: {} }, "give 'tokens'"],
    [
      { tokens: { ops: undefined } },
      "token 'ops' must be at least 32 characters (is its environment variable set?)",
    ],
    [{ tokens: { ops: 'short' } }, "token 'ops' must be at least 32 characters"],
    [{ tokens: { ops: OPS }, maxBatchSize: 0 }, "'maxBatchSize' must be an integer from 1 to 10000"],
    [{ tokens: { ops: OPS }, path: '/' }, "'path' must not be empty"],
    [
      { tokens: { ops: OPS }, consoleSessionTtlMs: 1000 },
      "'consoleSessionTtlMs' must be an integer of at least 60000",
    ],
  ])('refuses %j at startup', (options, message) => {
    expect(() => resolveAdminOptions(options)).toThrow(ConfigurationError);
    expect(() => resolveAdminOptions(options)).toThrow(message);
  });

  it('defaults the path and the batch size, and accepts a guard alone', () => {
    class OwnGuard {
      canActivate(): boolean {
        return true;
      }
    }
    expect(resolveAdminOptions({ guard: OwnGuard })).toMatchObject({
      path: 'admin/dead-letters',
      maxBatchSize: 100,
      tokens: [],
      console: false,
      consoleSessionTtlMs: 8 * 3_600_000,
    });
    expect(resolveAdminOptions({ tokens: { ops: OPS }, path: '/ops/dlq/' }).path).toBe('ops/dlq');
  });
});
