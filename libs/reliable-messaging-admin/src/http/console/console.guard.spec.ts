import { describe, expect, it } from '@jest/globals';
import { ForbiddenException, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AdminSessionRevocations } from '../../session/admin-session-revocations.service';
import { ADMIN_ACTOR } from '../admin-auth.guard';
import { ADMIN_ROLE, OperatorOnly } from '../admin-role';
import { resolveAdminOptions } from '../dead-letter-admin.options';
import { ConsoleContext } from './console-context';
import { CONSOLE_SESSION } from './console-http';
import { CONSOLE_COOKIE } from './console-session';
import { ConsoleGuard, ConsoleSignInRequired } from './console.guard';
import type { ResolvedMessagingOptions } from 'nestjs-reliable-messaging/operations';

const TOKEN = 'Tq4mV8xK2pR7nW1zL5cH9bY3dF6gJ0sA';
const VIEW = 'b7E2kQ9xM4nR8vT1zW6yC3pL5hJ0dF2s';

class Routes {
  read(this: void): void {}
  @OperatorOnly()
  act(this: void): void {}
}

interface FakeRequest {
  method: string;
  headers: Record<string, string>;
  body?: Record<string, string>;
  secure: boolean;
  [key: symbol]: unknown;
}

function fakeResponse(): { headers: Record<string, string | string[]>; setHeader: object; append: object } {
  const headers: Record<string, string | string[]> = {};
  return {
    headers,
    setHeader: (name: string, value: string) => (headers[name.toLowerCase()] = value),
    append: (name: string, value: string) => (headers[name.toLowerCase()] = value),
  };
}

function contextOf(request: FakeRequest, response: object, route: 'read' | 'act' = 'read'): ExecutionContext {
  return {
    switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }),
    getHandler: () => Routes.prototype[route],
  } as unknown as ExecutionContext;
}

describe('ConsoleGuard', () => {
  const console = new ConsoleContext(
    resolveAdminOptions({ tokens: { ops: TOKEN, support: { token: VIEW, role: 'viewer' } }, console: true }),
    {} as ResolvedMessagingOptions,
    new AdminSessionRevocations({} as ResolvedMessagingOptions),
  );
  const guard = new ConsoleGuard(console, new Reflector());
  const signedIn = console.sessions.issue('ops');
  const anonymous = console.sessions.issue(null);
  const cookie = (value: string) => ({ cookie: `${CONSOLE_COOKIE}=${value}` });
  const post = (session: string, form: Record<string, string>): FakeRequest => ({
    method: 'POST',
    headers: { ...cookie(session), 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
    secure: false,
  });

  it('lets a signed-in GET through, records the token name as the actor, and sets the security headers', async () => {
    const request: FakeRequest = { method: 'GET', headers: cookie(signedIn.cookie), secure: false };
    const response = fakeResponse();
    await expect(guard.canActivate(contextOf(request, response))).resolves.toBe(true);
    expect(request[ADMIN_ACTOR]).toBe('token:ops');
    expect(request[CONSOLE_SESSION]).toEqual(signedIn.session);
    expect(response.headers).toMatchObject({
      'content-security-policy': expect.stringContaining("default-src 'none'"),
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    });
  });

  it('gives a browser without a session an anonymous one, and sends it to sign in', async () => {
    const request: FakeRequest = { method: 'GET', headers: {}, secure: true };
    const response = fakeResponse();
    await expect(guard.canActivate(contextOf(request, response))).rejects.toThrow(ConsoleSignInRequired);
    expect(response.headers['set-cookie']).toMatch(/^rm_console=.*; HttpOnly; SameSite=Strict; Secure$/);
  });

  it.each([
    ['without a CSRF token', {}],
    ['with an empty CSRF token', { _csrf: '' }],
    ["with another session's CSRF token", { _csrf: console.sessions.csrfToken(anonymous.session) }],
  ])('refuses a POST %s with 403', async (_case, form) => {
    const request = post(signedIn.cookie, { confirm: 'yes', ...form });
    await expect(guard.canActivate(contextOf(request, fakeResponse()))).rejects.toThrow(ForbiddenException);
  });

  it("accepts a POST with its session's CSRF token", async () => {
    const request = post(signedIn.cookie, { _csrf: console.sessions.csrfToken(signedIn.session) });
    await expect(guard.canActivate(contextOf(request, fakeResponse()))).resolves.toBe(true);
  });

  it('refuses a POST of an anonymous session to a guarded route even with its CSRF token', async () => {
    const request = post(anonymous.cookie, { _csrf: console.sessions.csrfToken(anonymous.session) });
    await expect(guard.canActivate(contextOf(request, fakeResponse()))).rejects.toThrow(
      ConsoleSignInRequired,
    );
  });

  it("records a viewer's role, lets it read, and refuses it a page that acts with 403", async () => {
    const viewer = console.sessions.issue('support');
    const request: FakeRequest = { method: 'GET', headers: cookie(viewer.cookie), secure: false };
    await expect(guard.canActivate(contextOf(request, fakeResponse()))).resolves.toBe(true);
    expect(request[ADMIN_ROLE]).toBe('viewer');
    const acting: FakeRequest = { method: 'GET', headers: cookie(viewer.cookie), secure: false };
    await expect(guard.canActivate(contextOf(acting, fakeResponse(), 'act'))).rejects.toThrow(
      ForbiddenException,
    );
  });

  it('refuses a signed-in session once it is revoked, as if it had never signed in', async () => {
    const session = console.sessions.issue('ops');
    const request = (): FakeRequest => ({ method: 'GET', headers: cookie(session.cookie), secure: false });
    await expect(guard.canActivate(contextOf(request(), fakeResponse()))).resolves.toBe(true);
    await console.revocations.revoke(session.session.id, session.session.expiresAt);
    await expect(guard.canActivate(contextOf(request(), fakeResponse()))).rejects.toThrow(
      ConsoleSignInRequired,
    );
  });
});
