import { describe, expect, it } from '@jest/globals';
import { ConsoleSessions, cookieValue, sessionCookie, sessionKeyOf } from './console-session';

const HOUR = 3_600_000;

describe('ConsoleSessions', () => {
  let clock = 1_000_000;
  const sessions = new ConsoleSessions(HOUR, Buffer.alloc(32, 7), () => clock);

  it('reads back a session it issued, with its name, and never carries a token', () => {
    const { session, cookie } = sessions.issue('ops');
    expect(sessions.read(cookie)).toEqual(session);
    expect(session.name).toBe('ops');
    expect(Buffer.from(cookie.split('.')[0], 'base64url').toString()).not.toMatch(/token/);
  });

  it.each([
    ['no cookie', () => undefined],
    [
      'a forged payload',
      (cookie: string) =>
        `${Buffer.from('{"id":"x","name":"ops","expiresAt":9e15}').toString('base64url')}.${cookie.split('.')[1]}`,
    ],
    ['a truncated signature', (cookie: string) => cookie.slice(0, -2)],
    ['an extra segment', (cookie: string) => `${cookie}.x`],
    ['garbage', () => 'not-a-session'],
    [
      'a session signed by another key',
      () => new ConsoleSessions(HOUR, Buffer.alloc(32, 8), () => clock).issue('ops').cookie,
    ],
  ])('refuses %s', (_case, make) => {
    const { cookie } = sessions.issue('ops');
    expect(sessions.read(make(cookie))).toBeUndefined();
  });

  it('refuses a session once it expired', () => {
    const { cookie } = sessions.issue('ops');
    clock += HOUR - 1;
    expect(sessions.read(cookie)).toBeDefined();
    clock += 1;
    expect(sessions.read(cookie)).toBeUndefined();
  });

  it("accepts a form's CSRF token only for its own session", () => {
    const mine = sessions.issue('ops').session;
    const theirs = sessions.issue('ops').session;
    const token = sessions.csrfToken(mine);
    expect(sessions.csrfMatches(mine, token)).toBe(true);
    expect(sessions.csrfMatches(theirs, token)).toBe(false);
    expect(sessions.csrfMatches(mine, undefined)).toBe(false);
    expect(sessions.csrfMatches(mine, '')).toBe(false);
    expect(sessions.csrfMatches(mine, [token])).toBe(false);
    expect(sessions.csrfMatches(mine, `${token}x`)).toBe(false);
  });
});

describe('session cookies', () => {
  it('are HttpOnly and SameSite=Strict, Secure only over HTTPS', () => {
    expect(sessionCookie('v', '/admin/console', HOUR, false)).toBe(
      'rm_console=v; Path=/admin/console; Max-Age=3600; HttpOnly; SameSite=Strict',
    );
    expect(sessionCookie('v', '/c', HOUR, true)).toMatch(/; Secure$/);
  });

  it('are found among other cookies', () => {
    expect(cookieValue('a=1; rm_console=abc.def; b=2', 'rm_console')).toBe('abc.def');
    expect(cookieValue('rm_console_x=1', 'rm_console')).toBeUndefined();
    expect(cookieValue(undefined, 'rm_console')).toBeUndefined();
  });

  it('accepts a session issued under the same consoleSessionSecret (another replica) and refuses one under another', () => {
    const secret = 'Hx7pQ2vN9kR4mT8wZ1cL6bY3dF5gJ0sA';
    const replicaA = new ConsoleSessions(HOUR, sessionKeyOf(secret));
    const replicaB = new ConsoleSessions(HOUR, sessionKeyOf(secret));
    const stranger = new ConsoleSessions(HOUR, sessionKeyOf(`${secret}x`));
    const { session, cookie } = replicaA.issue('ops');
    expect(replicaB.read(cookie)).toEqual(session);
    expect(stranger.read(cookie)).toBeUndefined();
    expect(new ConsoleSessions(HOUR, sessionKeyOf(undefined)).read(cookie)).toBeUndefined();
  });
});
