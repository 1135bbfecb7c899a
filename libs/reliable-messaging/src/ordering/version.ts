import { NonRetryableError } from '../errors/non-retryable.error';

/**
 * A version of a piece of state, increasing with every change: a number or bigint (a version counter, a
 * sequence number) or a timestamp (a Date, or an ISO 8601 string such as `2025-11-29T10:00:00.000Z`).
 */
export type Version = number | bigint | Date | string;

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

type Comparable = { kind: 'count'; value: number | bigint } | { kind: 'time'; value: number };

/**
 * Compares two versions: negative when `a` is older than `b`, 0 when they are the same, positive when `a` is
 * newer. Counters compare with counters and timestamps with timestamps; anything else (NaN, an invalid date, a
 * string that is not an ISO 8601 timestamp, a counter against a timestamp) throws a NonRetryableError, since no
 * retry can make it comparable.
 */
export function compareVersions(a: Version, b: Version): number {
  const left = comparable(a, 'the first version');
  const right = comparable(b, 'the second version');
  if (left.kind !== right.kind) {
    throw new NonRetryableError(
      `cannot compare a ${left.kind === 'count' ? 'counter' : 'timestamp'} version with a ${right.kind === 'count' ? 'counter' : 'timestamp'} one`,
    );
  }
  // NOTE: `<` and `>` compare a number with a bigint exactly, where `===` is always false and subtracting throws.
  if (left.value < right.value) return -1;
  return left.value > right.value ? 1 : 0;
}

/** Whether `incoming` is newer than `current`. Any version is newer than none (`null` or `undefined`). */
export function isNewerVersion(incoming: Version, current: Version | null | undefined): boolean {
  if (current === null || current === undefined) {
    comparable(incoming, 'the incoming version');
    return true;
  }
  return compareVersions(incoming, current) > 0;
}

function comparable(version: Version, what: string): Comparable {
  if (typeof version === 'number') {
    if (!Number.isFinite(version)) throw new NonRetryableError(`${what} (${version}) is not a finite number`);
    return { kind: 'count', value: version };
  }
  if (typeof version === 'bigint') return { kind: 'count', value: version };
  if (version instanceof Date) {
    const time = version.getTime();
    if (Number.isNaN(time)) throw new NonRetryableError(`${what} is an invalid Date`);
    return { kind: 'time', value: time };
  }
  if (typeof version === 'string' && ISO_TIMESTAMP.test(version)) {
    const time = Date.parse(version);
    if (!Number.isNaN(time)) return { kind: 'time', value: time };
  }
  throw new NonRetryableError(
    `${what} (${typeof version === 'string' ? `'${version.slice(0, 64)}'` : typeof version}) is not a version: use a number, a bigint, a Date or an ISO 8601 timestamp`,
  );
}
