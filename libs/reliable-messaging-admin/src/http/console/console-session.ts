import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The console's session cookie. */
export const CONSOLE_COOKIE = 'rm_console';

/** One browser's session: anonymous until it signs in with a token, whose name it then carries. */
export interface ConsoleSession {
  /** A random id, new at each sign-in and sign-out, that the CSRF token is derived from. */
  id: string;
  /** The name of the token signed in with; null before sign-in (or when the app's own guard authenticates). */
  name: string | null;
  /** Expiry, epoch milliseconds. */
  expiresAt: number;
}

/**
 * The key sessions are signed with: derived from `consoleSessionSecret`, so that every replica given the same
 * secret accepts the others' sessions; without one, random and held in this process only, so that a restart
 * signs every browser out.
 */
export function sessionKeyOf(secret: string | undefined): Buffer {
  if (secret === undefined) return randomBytes(32);
  // A key of its own, so that the secret itself never signs anything an attacker sees.
  return createHmac('sha256', secret).update('rm-console-session-key', 'utf8').digest();
}

/**
 * Issues and checks the console's sessions. A session is `<payload>.<HMAC-SHA256>` in base64url, signed with
 * the key `sessionKeyOf` gives (never an admin token, which the browser sends only once, to sign in). The CSRF
 * token of a session is an HMAC of its id under the same key, so a page needs no server-side state to check it.
 * Signing out is remembered apart, by session id (AdminSessionRevocations).
 */
export class ConsoleSessions {
  constructor(
    private readonly ttlMs: number,
    private readonly key: Buffer = randomBytes(32),
    private readonly now: () => number = Date.now,
  ) {}

  /** A new session, signed in as `name` or anonymous, and its cookie value. */
  issue(name: string | null): { session: ConsoleSession; cookie: string } {
    const session = { id: randomBytes(16).toString('base64url'), name, expiresAt: this.now() + this.ttlMs };
    const payload = Buffer.from(JSON.stringify(session), 'utf8').toString('base64url');
    return { session, cookie: `${payload}.${this.sign(`session:${payload}`)}` };
  }

  /** The session a cookie value holds, or undefined when it is missing, forged, malformed or expired. */
  read(cookie: string | undefined): ConsoleSession | undefined {
    if (!cookie) return undefined;
    const [payload, signature, extra] = cookie.split('.');
    if (!payload || !signature || extra !== undefined) return undefined;
    if (!sameText(signature, this.sign(`session:${payload}`))) return undefined;
    try {
      const session = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as ConsoleSession;
      if (typeof session.id !== 'string' || typeof session.expiresAt !== 'number') return undefined;
      if (session.name !== null && typeof session.name !== 'string') return undefined;
      return session.expiresAt > this.now() ? session : undefined;
    } catch {
      return undefined;
    }
  }

  /** The synchronizer token every form of this session carries. */
  csrfToken(session: ConsoleSession): string {
    return this.sign(`csrf:${session.id}`);
  }

  /** Whether `given` is this session's CSRF token. */
  csrfMatches(session: ConsoleSession, given: unknown): boolean {
    return typeof given === 'string' && sameText(given, this.csrfToken(session));
  }

  private sign(text: string): string {
    return createHmac('sha256', this.key).update(text, 'utf8').digest('base64url');
  }
}

/** The value of cookie `name` in a `Cookie` header. */
export function cookieValue(header: unknown, name: string): string | undefined {
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** A `Set-Cookie` value for the session: HttpOnly, SameSite=Strict, scoped to the console, Secure over HTTPS. */
export function sessionCookie(value: string, path: string, maxAgeMs: number, secure: boolean): string {
  return [
    `${CONSOLE_COOKIE}=${value}`,
    `Path=${path}`,
    `Max-Age=${Math.floor(maxAgeMs / 1000)}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
