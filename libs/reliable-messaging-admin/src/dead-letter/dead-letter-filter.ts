import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { bodyText, type DeadLetter } from 'nestjs-reliable-messaging/operations';

/** Which dead letters an operation applies to; every field given must match. An empty filter matches all. */
export interface DeadLetterFilter {
  /** The consumer queue (or its `<queue>.dlq`; a consumer with lanes: its `@Consume()` queue for every lane, or one lane queue `<queue>.<lane>`). Default: every dead-letter queue of the app's consumers. */
  queue?: string;
  /** Only these message ids. */
  messageIds?: string[];
  /** The error class recorded, exactly (e.g. `PaymentDeclined`). */
  errorClass?: string;
  /** The message type, exactly (e.g. `order.placed`). */
  type?: string;
  /** The dead-letter reason, exactly (e.g. `attempts-exhausted`). */
  reason?: string;
  /** Dead-lettered at or after. */
  since?: Date;
  /** Dead-lettered before. */
  until?: Date;
  /** Case-insensitive text found in the body or the error message. */
  text?: string;
}

/** Whether a dead letter matches every field of the filter (the queue is chosen before, by the caller). */
export function matchesFilter(deadLetter: DeadLetter, filter: DeadLetterFilter): boolean {
  if (filter.messageIds && !(deadLetter.messageId && filter.messageIds.includes(deadLetter.messageId)))
    return false;
  if (filter.errorClass !== undefined && deadLetter.errorClass !== filter.errorClass) return false;
  if (filter.type !== undefined && deadLetter.type !== filter.type) return false;
  if (filter.reason !== undefined && deadLetter.reason !== filter.reason) return false;
  const at = deadLetter.deadLetteredAt?.getTime();
  if (filter.since && (at === undefined || at < filter.since.getTime())) return false;
  if (filter.until && (at === undefined || at >= filter.until.getTime())) return false;
  if (filter.text !== undefined) {
    const needle = filter.text.toLowerCase();
    const haystacks = [bodyText(deadLetter), deadLetter.errorMessage];
    if (!haystacks.some((haystack) => haystack?.toLowerCase().includes(needle))) return false;
  }
  return true;
}

/** Whether the filter selects something narrower than "everything" (the queue alone does not count). */
export function narrowsSelection(filter: DeadLetterFilter): boolean {
  const { queue: _queue, ...rest } = filter;
  return Object.values(rest).some((value) => value !== undefined);
}

/** Filter fields as the CLI and the admin API receive them: strings (a list for message ids). */
export interface DeadLetterFilterInput {
  queue?: unknown;
  messageIds?: unknown;
  errorClass?: unknown;
  type?: unknown;
  reason?: unknown;
  since?: unknown;
  until?: unknown;
  text?: unknown;
}

const RELATIVE = /^(\d+)(s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const MAX_TEXT = 256;

/**
 * Checks and converts filter input. Times are ISO 8601 (`2026-05-01T10:00:00Z`) or an age relative to `now`
 * (`30m`, `2h`, `7d`: "that long ago"). Throws InvalidDeadLetterQueryError naming the field and what to write.
 */
export function parseDeadLetterFilter(
  input: DeadLetterFilterInput,
  now: number = Date.now(),
): DeadLetterFilter {
  const filter: DeadLetterFilter = {
    queue: optionalString('queue', input.queue),
    errorClass: optionalString('errorClass', input.errorClass),
    type: optionalString('type', input.type),
    reason: optionalString('reason', input.reason),
    text: optionalString('text', input.text),
    since: optionalTime('since', input.since, now),
    until: optionalTime('until', input.until, now),
  };
  if (input.messageIds !== undefined && input.messageIds !== null) {
    const ids = Array.isArray(input.messageIds) ? input.messageIds : [input.messageIds];
    if (
      ids.length === 0 ||
      ids.length > 10_000 ||
      ids.some((id) => typeof id !== 'string' || id === '' || id.length > 256)
    ) {
      throw new InvalidDeadLetterQueryError("'messageIds' must be a list of 1 to 10000 message ids");
    }
    filter.messageIds = ids as string[];
  }
  if (filter.since && filter.until && filter.since.getTime() >= filter.until.getTime()) {
    throw new InvalidDeadLetterQueryError("'since' must be earlier than 'until'");
  }
  for (const key of Object.keys(filter) as Array<keyof DeadLetterFilter>) {
    if (filter[key] === undefined) delete filter[key];
  }
  return filter;
}

/** A time given as ISO 8601 or as an age (`30m`, `2h`, `7d`, `1w`) before `now`. */
export function parseTime(field: string, value: string, now: number = Date.now()): Date {
  const relative = RELATIVE.exec(value.trim());
  const date = relative ? new Date(now - Number(relative[1]) * UNIT_MS[relative[2]]) : new Date(value);
  if (Number.isNaN(date.getTime()) || (!relative && !/^\d{4}-\d{2}-\d{2}/.test(value))) {
    throw new InvalidDeadLetterQueryError(
      `'${field}' must be an ISO 8601 time (2026-05-01T10:00:00Z) or an age such as 30m, 2h, 7d; got '${value}'`,
    );
  }
  return date;
}

function optionalString(field: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || value.length > MAX_TEXT) {
    throw new InvalidDeadLetterQueryError(`'${field}' must be a string of at most ${MAX_TEXT} characters`);
  }
  return value;
}

function optionalTime(field: string, value: unknown, now: number): Date | undefined {
  const text = optionalString(field, value);
  return text === undefined ? undefined : parseTime(field, text, now);
}
