/**
 * SQLSTATEs after which the same work can succeed on another try: the connection broke or was refused, the
 * server is shutting down or full, or the transaction lost a serialization race or a deadlock.
 */
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '53300', '57P01', '57P02', '57P03']);

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
 * True when `error` says the database was unavailable or the transaction lost a race (connection lost, server
 * shutting down, serialization failure, deadlock), not that the message or the handler is wrong: the work
 * should be tried again as it is, without counting against the message.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 4; depth++) {
    if (typeof current !== 'object') return false;
    const { code, message, name } = current as { code?: unknown; message?: unknown; name?: unknown };
    if (
      typeof code === 'string' &&
      (code.startsWith('08') || TRANSIENT_SQLSTATES.has(code) || NETWORK_CODES.has(code))
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
