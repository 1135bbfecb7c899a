import { isOutboxRowId, MAX_OUTBOX_ROW_ID } from 'nestjs-reliable-messaging/operations';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { parseTime } from '../dead-letter/dead-letter-filter';

/** Which parked outbox rows an operation applies to; every field given must match. An empty filter matches all. */
export interface OutboxFilter {
  /** Only these rows, each named by its outbox row id (digits) or its message id. */
  ids?: string[];
  /** The message type, exactly (e.g. `order.placed`). */
  type?: string;
  /** The ordering key, exactly. */
  orderingKey?: string;
  /** Parked at or after. */
  since?: Date;
  /** Parked before. */
  until?: Date;
  /** Case-insensitive text found in the body or the reason it was parked. */
  text?: string;
}

/** Filter fields as the CLI and the admin API receive them: strings (a list for ids). */
export interface OutboxFilterInput {
  ids?: unknown;
  type?: unknown;
  orderingKey?: unknown;
  since?: unknown;
  until?: unknown;
  text?: unknown;
}

const MAX_TEXT = 256;
const MAX_IDS = 10_000;

/**
 * Checks and converts filter input, as parseDeadLetterFilter does: times are ISO 8601 or an age (`30m`, `2h`,
 * `7d`). Throws InvalidDeadLetterQueryError naming the field and what to write.
 */
export function parseOutboxFilter(input: OutboxFilterInput, now: number = Date.now()): OutboxFilter {
  const filter: OutboxFilter = {};
  if (input.ids !== undefined && input.ids !== null) {
    const ids = Array.isArray(input.ids) ? input.ids : [input.ids];
    if (
      ids.length === 0 ||
      ids.length > MAX_IDS ||
      ids.some((id) => typeof id !== 'string' || id === '' || id.length > MAX_TEXT)
    ) {
      throw new InvalidDeadLetterQueryError(
        `'ids' must be a list of 1 to ${MAX_IDS} outbox row ids or message ids`,
      );
    }
    for (const id of ids as string[]) checkOutboxId(id);
    filter.ids = ids as string[];
  }
  for (const field of ['type', 'orderingKey', 'text'] as const) {
    const value = optionalString(field, input[field]);
    if (value !== undefined) filter[field] = value;
  }
  for (const field of ['since', 'until'] as const) {
    const value = optionalString(field, input[field]);
    if (value !== undefined) filter[field] = parseTime(field, value, now);
  }
  if (filter.since && filter.until && filter.since.getTime() >= filter.until.getTime()) {
    throw new InvalidDeadLetterQueryError("'since' must be earlier than 'until'");
  }
  return filter;
}

/**
 * Refuses an id of digits that no outbox row can have (0, or above the `bigint` maximum), which would otherwise
 * fail the whole query. Any other text may be a message id.
 */
export function checkOutboxId(id: string): void {
  if (/^\d+$/.test(id) && !isOutboxRowId(id)) {
    throw new InvalidDeadLetterQueryError(
      `'${id.length > 40 ? `${id.slice(0, 40)}...` : id}' is not an outbox row id: row ids run from 1 to ${MAX_OUTBOX_ROW_ID}`,
    );
  }
}

/** Whether the filter selects something narrower than every parked row. */
export function narrowsOutboxSelection(filter: OutboxFilter): boolean {
  return Object.values(filter).some((value) => value !== undefined);
}

function optionalString(field: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || value.length > MAX_TEXT) {
    throw new InvalidDeadLetterQueryError(`'${field}' must be a string of at most ${MAX_TEXT} characters`);
  }
  return value;
}
