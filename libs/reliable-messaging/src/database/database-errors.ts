/**
 * SQLSTATEs that say the database cannot serve right now: the server is shutting down, starting up or crashed,
 * the backend was terminated, or it has no connection to spare. Class 08 (connection exceptions) counts too.
 */
const UNAVAILABLE_SQLSTATES = new Set(['53300', '57P01', '57P02', '57P03']);

/** Errors of node-postgres and TypeORM that mean the connection is gone rather than that the SQL was wrong. */
const CONNECTION_LOST =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Query runner already released|query runner was already released/i;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * True when `error` says the database was unavailable (connection refused or lost, backend terminated, server
 * shutting down or starting, too many clients), not that the message or the handler is wrong: the work should
 * wait for the database and be tried again as it is, without counting against the message. A serialization
 * failure or a deadlock is not an outage: another attempt may succeed, and it counts as one.
 */
export function isDatabaseUnavailableError(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 4; depth++) {
    if (typeof current !== 'object') return false;
    const { code, message, name } = current as { code?: unknown; message?: unknown; name?: unknown };
    if (
      typeof code === 'string' &&
      (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || NETWORK_CODES.has(code))
    ) {
      return true;
    }
    if (name === 'QueryRunnerAlreadyReleasedError' || name === 'QueryRunnerProviderAlreadyReleasedError')
      return true;
    if (typeof message === 'string' && CONNECTION_LOST.test(message)) return true;
    current =
      (current as { driverError?: unknown; cause?: unknown }).driverError ??
      (current as { cause?: unknown }).cause;
  }
  return false;
}
