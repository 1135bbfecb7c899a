import { describe, expect, it } from '@jest/globals';
import {
  ForbiddenException,
  HttpException,
  UnauthorizedException,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ConfigurationError } from 'nestjs-reliable-messaging';
import type { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { AdminAuthFailures } from './admin-auth-failures.service';
import { ADMIN_ACTOR, AdminAuthGuard } from './admin-auth.guard';
import { ADMIN_ROLE, OperatorOnly } from './admin-role';
import { resolveAdminOptions, type DeadLetterAdminOptions } from './dead-letter-admin.options';

const OPS = '5f0c2a9e7d41b3c86e19a4f2d07b58c3e6a1';
const CI = 'Zq8vR2mXk4Tn7Lp1Wc9Hb6Yd3Fg5Js0A';
const VIEW = 'b7E2kQ9xM4nR8vT1zW6yC3pL5hJ0dF2s';

interface FakeRequest {
  headers: Record<string, string>;
  ip: string;
  method: string;
  path: string;
  [key: symbol]: unknown;
}

function requestWith(authorization?: string, ip = '10.0.0.1'): FakeRequest {
  return { headers: authorization === undefined ? {} : { authorization }, ip, method: 'GET', path: '/x' };
}

class Routes {
  read(this: void): void {}
  @OperatorOnly()
  act(this: void): void {}
}

function contextOf(
  request: object,
  route: 'read' | 'act' = 'read',
  response: object = fakeResponse(),
): ExecutionContext {
  return {
    switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }),
    getHandler: () => Routes.prototype[route],
  } as unknown as ExecutionContext;
}

function fakeResponse(): {
  headers: Record<string, string>;
  setHeader: (name: string, value: string) => void;
} {
  const headers: Record<string, string> = {};
  return { headers, setHeader: (name, value) => void (headers[name.toLowerCase()] = value) };
}

function guardOf(options: DeadLetterAdminOptions): { guard: AdminAuthGuard; audited: unknown[] } {
  const audited: unknown[] = [];
  const audit = { note: async (entry: unknown) => void audited.push(entry) } as unknown as DeadLetterAudit;
  const resolved = resolveAdminOptions(options);
  return {
    guard: new AdminAuthGuard(resolved, new Reflector(), new AdminAuthFailures(resolved, audit)),
    audited,
  };
}

describe('AdminAuthGuard', () => {
  const { guard } = guardOf({ tokens: { ops: OPS, ci: CI, support: { token: VIEW, role: 'viewer' } } });

  it.each([
    ['ops', 'operator', `Bearer ${OPS}`],
    ['ci', 'operator', `bearer ${CI}`],
    ['support', 'viewer', `Bearer ${VIEW}`],
  ])(
    'lets in a request with the %s token and records its name as the actor and its role (%s)',
    async (name, role, header) => {
      const request = requestWith(header);
      await expect(guard.canActivate(contextOf(request))).resolves.toBe(true);
      expect(request[ADMIN_ACTOR]).toBe(`token:${name}`);
      expect(request[ADMIN_ROLE]).toBe(role);
    },
  );

  it('refuses a viewer on a route that acts with 403, and lets an operator through', async () => {
    await expect(guard.canActivate(contextOf(requestWith(`Bearer ${VIEW}`), 'act'))).rejects.toThrow(
      ForbiddenException,
    );
    await expect(guard.canActivate(contextOf(requestWith(`Bearer ${OPS}`), 'act'))).resolves.toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['an empty bearer', 'Bearer '],
    ['a wrong token of the same length', `Bearer ${'x'.repeat(OPS.length)}`],
    ['a longer token', `Bearer ${OPS}x`],
    ['the token without its scheme', OPS],
  ])('refuses %s with 401', async (_what, header) => {
    await expect(guard.canActivate(contextOf(requestWith(header, `10.1.0.${_what.length}`)))).rejects.toThrow(
      UnauthorizedException,
    );
  });

  it('audits each wrong token with its address and never the token, and answers the sixth in the window with 429 and Retry-After', async () => {
    const { guard: fresh, audited } = guardOf({ tokens: { ops: OPS } });
    const wrong = `Bearer ${'y'.repeat(40)}`;
    for (let i = 0; i < 5; i++) {
      await expect(fresh.canActivate(contextOf(requestWith(wrong, '10.9.9.9')))).rejects.toThrow(
        UnauthorizedException,
      );
    }
    expect(audited).toHaveLength(5);
    expect(audited[0]).toMatchObject({
      action: 'token-refused',
      actor: 'address:10.9.9.9',
      outcome: 'failed',
    });
    expect(JSON.stringify(audited)).not.toContain('yyyy');
    const response = fakeResponse();
    const held = fresh.canActivate(contextOf(requestWith(`Bearer ${OPS}`, '10.9.9.9'), 'read', response));
    await expect(held).rejects.toThrow(HttpException);
    await held.catch((error: HttpException) => expect(error.getStatus()).toBe(429));
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    await expect(fresh.canActivate(contextOf(requestWith(`Bearer ${OPS}`, '10.9.9.8')))).resolves.toBe(true);
  });
});

describe('resolveAdminOptions', () => {
  it.each([
    [{}, "give 'tokens'"],
    [{ tokens: {} }, "give 'tokens'"],
    [{ tokens: { ops: undefined } }, "token 'ops' is missing (is its environment variable set?)"],
    [{ tokens: { ops: 'short' } }, "token 'ops' must be at least 32 characters"],
    [{ tokens: { ops: 'a'.repeat(32) } }, "token 'ops' is too easy to guess"],
    [{ tokens: { ops: 'ab'.repeat(32) } }, "token 'ops' is too easy to guess"],
    [{ tokens: [{ token: 'c'.repeat(31) + 'd', role: 'viewer' }] }, "token 'viewer-1' is too easy to guess"],
    [{ tokens: { ops: { token: OPS, role: 'admin' } } }, 'token \'ops\' has role "admin"'],
    [{ tokens: { ops: OPS }, maxBatchSize: 0 }, "'maxBatchSize' must be an integer from 1 to 10000"],
    [{ tokens: { ops: OPS }, path: '/' }, "'path' must not be empty"],
    [
      { tokens: { ops: OPS }, consoleSessionTtlMs: 1000 },
      "'consoleSessionTtlMs' must be an integer of at least 60000",
    ],
    [
      { tokens: { ops: OPS }, consoleSessionSecret: 's'.repeat(64) },
      "'consoleSessionSecret' is too easy to guess",
    ],
    [{ tokens: { ops: OPS }, authFailureLimit: { failures: 0 } }, "'authFailureLimit' needs"],
  ])('refuses %j at startup', (options, message) => {
    expect(() => resolveAdminOptions(options as DeadLetterAdminOptions)).toThrow(ConfigurationError);
    expect(() => resolveAdminOptions(options as DeadLetterAdminOptions)).toThrow(message);
  });

  it('takes a plain token string as an operator, and the list form with names and roles', () => {
    expect(resolveAdminOptions({ tokens: { ops: OPS } }).tokens).toEqual([
      { name: 'ops', token: OPS, role: 'operator' },
    ]);
    expect(
      resolveAdminOptions({
        tokens: [
          { token: VIEW, role: 'viewer' },
          { token: CI, role: 'operator', name: 'ci' },
        ],
      }).tokens,
    ).toEqual([
      { name: 'viewer-1', token: VIEW, role: 'viewer' },
      { name: 'ci', token: CI, role: 'operator' },
    ]);
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
      authFailureLimit: { failures: 5, windowMs: 300_000 },
    });
    expect(resolveAdminOptions({ tokens: { ops: OPS }, path: '/ops/dlq/' }).path).toBe('ops/dlq');
  });
});
