import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * The request as `identifyCaller` sees it: the HTTP adapter's request (Express' or Fastify's), after the route's
 * guards ran, with `user` where an authentication guard put the principal (Passport and Nest's guides do).
 */
export type CallerRequest = IncomingMessage & { user?: unknown };

/**
 * Says who sent a request: a stable identity of the client (a user id, an account, an API key's id), or
 * undefined when the request carries none. Keys are scoped per caller: one caller's key is unknown to every other.
 * What it returns is hashed (SHA-256) before it is stored or compared, so a raw token is never written down.
 */
export type IdentifyCaller = (request: CallerRequest) => string | undefined;

/** The stored caller of requests that carry no identity; never a hash (those are 64 hex digits). */
export const ANONYMOUS_CALLER = 'anonymous';

/**
 * The default `identifyCaller`, in this order:
 *
 * 1. the authenticated principal: `request.user.sub`, else `.id`, else `.userId` (a non-empty string or a finite
 *    number), as an authentication guard leaves it;
 * 2. else the `Authorization` header: the user name of `Basic` credentials (never the password), or the whole
 *    header for any other scheme (a bearer token, an API key);
 * 3. else no identity: the request shares the anonymous callers' keys.
 *
 * The principal comes first because it outlives its credentials: a client that retries with a refreshed token
 * is still the same caller and gets its stored response.
 */
export function defaultIdentifyCaller(request: CallerRequest): string | undefined {
  const principal = principalOf(request.user);
  if (principal !== undefined) return `principal:${principal}`;
  const authorization = request.headers.authorization?.trim();
  if (!authorization) return undefined;
  const basic = /^basic\s+(\S+)$/i.exec(authorization);
  if (basic) {
    const credentials = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = credentials.indexOf(':');
    return `basic:${colon === -1 ? credentials : credentials.slice(0, colon)}`;
  }
  return `authorization:${authorization}`;
}

/**
 * What the key's row stores as its caller: SHA-256, hex, of the identity, or ANONYMOUS_CALLER. An identity that
 * is not a string is a bug in `identifyCaller`, thrown rather than guessed at.
 */
export function storedCaller(identity: unknown): string {
  if (identity === undefined || identity === '') return ANONYMOUS_CALLER;
  if (typeof identity !== 'string') {
    throw new TypeError(
      `IdempotencyModule: identifyCaller must return a string or undefined, got ${typeof identity}`,
    );
  }
  return createHash('sha256').update(identity).digest('hex');
}

function principalOf(user: unknown): string | undefined {
  if (typeof user !== 'object' || user === null) return undefined;
  for (const field of ['sub', 'id', 'userId'] as const) {
    const value: unknown = (user as Record<string, unknown>)[field];
    if (typeof value === 'string' && value !== '') return value;
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  }
  return undefined;
}
