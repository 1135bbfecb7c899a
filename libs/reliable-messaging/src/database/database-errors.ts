/**
 * SQLSTATEs that say the database cannot serve right now: the server is shutting down, starting up or crashed,
 * the backend was terminated, or it has no connection to spare. Class 08 (connection exceptions) counts too.
 */
const UNAVAILABLE_SQLSTATES = new Set(['53300', '57P01', '57P02', '57P03']);

/** Errors of node-postgres and TypeORM that mean the connection is gone rather than that the SQL was wrong. */
const CONNECTION_LOST =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Query runner already released|query runner was already released/i;

/** node-postgres's `query_timeout` firing: the server did not answer in time, which a hung link also causes. */
const READ_TIMEOUT = /^Query read timeout$/;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * What `error` says of the database: `unavailable` when the server or its driver says it cannot serve
 * (connection lost or refused by the server, backend terminated, server shutting down or starting, too many
 * clients); `network` when only a socket error code or the driver's read timeout says so, which may as well
 * come from another service the handler called or a slow query; undefined when it says nothing of the kind (a
 * serialization failure or a deadlock included: another attempt may succeed, and it counts as one).
 */
export function databaseOutageEvidence(error: unknown): 'unavailable' | 'network' | undefined {
  let network = false;
  for (let current: unknown = error, depth = 0; current && depth < 4; depth++) {
    if (typeof current !== 'object') break;
    const { code, message, name } = current as { code?: unknown; message?: unknown; name?: unknown };
    if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code))) {
      return 'unavailable';
    }
    if (typeof code === 'string' && NETWORK_CODES.has(code)) network = true;
    if (typeof message === 'string' && READ_TIMEOUT.test(message)) network = true;
    if (name === 'QueryRunnerAlreadyReleasedError' || name === 'QueryRunnerProviderAlreadyReleasedError')
      return 'unavailable';
    if (typeof message === 'string' && CONNECTION_LOST.test(message)) return 'unavailable';
    current =
      (current as { driverError?: unknown; cause?: unknown }).driverError ??
      (current as { cause?: unknown }).cause;
  }
  return network ? 'network' : undefined;
}

/**
 * True when `error` may say the database was unavailable (see {@link databaseOutageEvidence}), not that the
 * message or the handler is wrong: the work should wait for the database and be tried again as it is, without
 * counting against the message.
 */
export function isDatabaseUnavailableError(error: unknown): boolean {
  return databaseOutageEvidence(error) !== undefined;
}

/**
 * The SQLSTATE `error` carries, itself or through TypeORM's `driverError` and `cause` (a few levels deep), or
 * undefined when it carries none.
 */
export function sqlStateOf(error: unknown): string | undefined {
  for (
    let current: unknown = error, depth = 0;
    current && typeof current === 'object' && depth < 4;
    depth++
  ) {
    const { code } = current as { code?: unknown };
    // A socket's EPIPE has the shape of a SQLSTATE too.
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !NETWORK_CODES.has(code)) return code;
    current =
      (current as { driverError?: unknown; cause?: unknown }).driverError ??
      (current as { cause?: unknown }).cause;
  }
  return undefined;
}
