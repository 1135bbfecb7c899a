import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import type { ScheduledCancelTarget, ScheduledFilter } from './scheduled-operation';

/** Filter fields as the CLI and the admin API receive them: strings. */
export interface ScheduledFilterInput {
  type?: unknown;
  dueBefore?: unknown;
  after?: unknown;
}

const MAX_TEXT = 256;
const AHEAD = /^(\d+)(s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CURSOR = /^(\d{4}-\d{2}-\d{2}T[\d:.]+Z),([1-9]\d{0,18})$/;

/**
 * Checks and converts filter input: `dueBefore` is ISO 8601 or a time ahead (`30m`, `2h`, `7d`: due within it),
 * `after` the `next` cursor of a previous page. Throws InvalidDeadLetterQueryError naming the field.
 */
export function parseScheduledFilter(input: ScheduledFilterInput, now: number = Date.now()): ScheduledFilter {
  const filter: ScheduledFilter = {};
  const type = optionalString('type', input.type);
  if (type !== undefined) filter.type = type;
  const dueBefore = optionalString('dueBefore', input.dueBefore);
  if (dueBefore !== undefined) filter.dueBefore = parseDueBefore(dueBefore, now);
  const after = optionalString('after', input.after);
  if (after !== undefined) {
    cursorOf(after);
    filter.after = after;
  }
  return filter;
}

/** A due-before time: ISO 8601, or a time ahead of now (`2h`). */
export function parseDueBefore(value: string, now: number = Date.now()): Date {
  const ahead = AHEAD.exec(value.trim());
  const date = ahead ? new Date(now + Number(ahead[1]) * UNIT_MS[ahead[2]]) : new Date(value);
  if (Number.isNaN(date.getTime()) || (!ahead && !/^\d{4}-\d{2}-\d{2}/.test(value))) {
    throw new InvalidDeadLetterQueryError(
      `'dueBefore' must be an ISO 8601 time (2026-05-01T10:00:00Z) or a time ahead such as 30m, 2h, 7d; got '${value.slice(0, 40)}'`,
    );
  }
  return date;
}

/** The cursor of the page after `row`. */
export function cursorAfter(row: { deliverAt: Date; id: string }): string {
  return `${row.deliverAt.toISOString()},${row.id}`;
}

/** A cursor as the core's keyset paging takes it. */
export function cursorOf(cursor: string): { deliverAt: Date; id: string } {
  const match = CURSOR.exec(cursor);
  const deliverAt = match ? new Date(match[1]) : undefined;
  if (!match || !deliverAt || Number.isNaN(deliverAt.getTime())) {
    throw new InvalidDeadLetterQueryError(
      "'after' must be the 'next' cursor of a previous page (<due time>,<row id>)",
    );
  }
  return { deliverAt, id: match[2] };
}

/** Exactly one of a message id (a UUID, as publish() returned it) and an idempotency key. */
export function parseCancelTarget(input: {
  messageId?: unknown;
  idempotencyKey?: unknown;
}): ScheduledCancelTarget {
  const messageId = optionalString('messageId', input.messageId);
  const idempotencyKey = optionalString('idempotencyKey', input.idempotencyKey);
  if ((messageId === undefined) === (idempotencyKey === undefined)) {
    throw new InvalidDeadLetterQueryError(
      'a cancel names exactly one of a message id and an idempotency key',
    );
  }
  if (messageId !== undefined) {
    if (!UUID.test(messageId)) {
      throw new InvalidDeadLetterQueryError(
        `'${messageId.slice(0, 40)}' is not a message id: scheduled messages are named by the UUID publish() returned`,
      );
    }
    return { messageId: messageId.toLowerCase() };
  }
  return { idempotencyKey: idempotencyKey as string };
}

function optionalString(field: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || value.length > MAX_TEXT) {
    throw new InvalidDeadLetterQueryError(`'${field}' must be a string of at most ${MAX_TEXT} characters`);
  }
  return value;
}
