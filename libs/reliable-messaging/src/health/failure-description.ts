import { TimeoutError } from '../util/with-timeout';

/** Socket error codes that say the server could not be reached at all. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * Why a health check of `what` (`database`, say) failed, in the module's words: `database unreachable
 * (ECONNREFUSED)`, `database refused the check (SQLSTATE 57P01)`, `the database did not answer within 1000 ms`.
 * Never the error's own message: a driver's names the host, port and user it tried (`connect ECONNREFUSED
 * 10.0.3.7:5432`, `password authentication failed for user "orders"`), and health output is served to whoever
 * reaches the probe port.
 */
export function describeFailure(what: string, error: unknown): string {
  if (error instanceof TimeoutError) return error.message;
  const code = codeOf(error);
  if (code !== undefined && UNREACHABLE_CODES.has(code)) return `${what} unreachable (${code})`;
  if (code !== undefined && SQLSTATE.test(code)) return `${what} refused the check (SQLSTATE ${code})`;
  const name = error instanceof Error ? error.name : typeof error;
  return `${what} check failed (${code === undefined ? name : `${name} ${code}`})`;
}

/**
 * The first string code along the error's chain: TypeORM's `driverError`, a `cause`, or the first of an
 * AggregateError's errors (Node's connect to a name with several addresses fails with one per address).
 */
function codeOf(error: unknown): string | undefined {
  let current = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const { code } = current as { code?: unknown };
    if (typeof code === 'string' && /^[\w-]{1,32}$/.test(code)) return code;
    const next = current as { driverError?: unknown; cause?: unknown; errors?: unknown };
    current = next.driverError ?? next.cause ?? (Array.isArray(next.errors) ? next.errors[0] : undefined);
  }
  return undefined;
}
