import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { narrowsSelection, type DeadLetterFilter } from './dead-letter-filter';

/** The most messages one list, replay or purge touches unless it says otherwise. */
export const DEFAULT_DEAD_LETTER_LIMIT = 1000;
/** The most messages one operation may touch. */
export const MAX_DEAD_LETTER_LIMIT = 100_000;

/** Which dead letters a replay or purge applies to: a filter, or `all` for every message of the queue(s). */
export interface DeadLetterSelection extends DeadLetterFilter {
  /** Required to replay or purge without any other filter than the queue. Default: false. */
  all?: boolean;
}

/** The limit an operation runs with: the default when none is given; refused outside 1 to 100000. */
export function checkLimit(limit: number | undefined): number {
  const value = limit ?? DEFAULT_DEAD_LETTER_LIMIT;
  if (!Number.isInteger(value) || value < 1 || value > MAX_DEAD_LETTER_LIMIT) {
    throw new InvalidDeadLetterQueryError(
      `'limit' must be an integer from 1 to ${MAX_DEAD_LETTER_LIMIT}, got ${String(limit)}`,
    );
  }
  return value;
}

/** Refuses a replay or purge of a whole queue that does not say `all`, so no typo empties a queue. */
export function requireSelection(action: string, selection: DeadLetterSelection): void {
  const { all, ...filter } = selection;
  if (!narrowsSelection(filter) && all !== true) {
    throw new InvalidDeadLetterQueryError(
      `a ${action} needs a selection: message ids, a filter (error class, type, reason, time window, text), or 'all' for every dead letter of the queue(s)`,
    );
  }
}

/** The selection as the audit record stores it: the fields given, dates as ISO strings, and the limit. */
export function describeSelection(selection: DeadLetterSelection, limit: number): Record<string, unknown> {
  const described: Record<string, unknown> = { limit };
  for (const [key, value] of Object.entries(selection)) {
    if (value !== undefined) described[key] = value instanceof Date ? value.toISOString() : value;
  }
  return described;
}
