import { Option, type Command } from 'commander';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { parseDeadLetterFilter, parseTime, type DeadLetterFilter } from '../dead-letter/dead-letter-filter';
import type { DeadLetterSelection } from '../dead-letter/dead-letter-selection';

/** The options the commands take, as commander parses them. */
export interface FilterFlags {
  queue?: string;
  id?: string[];
  errorClass?: string;
  type?: string;
  reason?: string;
  since?: string;
  until?: string;
  text?: string;
  limit?: string;
  all?: boolean;
  json?: boolean;
  dryRun?: boolean;
  note?: string;
  yes?: boolean;
  allowEmpty?: boolean;
}

/** Checks a time as commander reads it, so a malformed one is refused before the app boots. */
export function timeArgument(field: string): (value: string) => string {
  return (value) => {
    parseTime(field, value);
    return value;
  };
}

/** Checks `--limit` as commander reads it, so a malformed one is refused before the app boots. */
export function limitArgument(value: string): string {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1)
    throw new InvalidDeadLetterQueryError(`--limit must be a positive integer, got '${value}'`);
  return value;
}

/** Adds the filter options that `list`, `replay` and `purge` share. */
export function withFilters(command: Command): Command {
  return command
    .option(
      '-q, --queue <queue>',
      "the consumer queue as declared on the broker, with the app's namespace prefix (default: every dead-letter queue of the app)",
    )
    .option('--id <messageId...>', 'only these message ids')
    .option('--error-class <class>', 'only this error class, e.g. PaymentDeclined')
    .option('--type <type>', 'only this message type, e.g. order.placed')
    .option('--reason <reason>', 'only this reason, e.g. attempts-exhausted')
    .option(
      '--since <time>',
      'dead-lettered at or after: ISO 8601 or an age (30m, 2h, 7d)',
      timeArgument('since'),
    )
    .option('--until <time>', 'dead-lettered before: ISO 8601 or an age', timeArgument('until'))
    .option('--text <text>', 'text found in the body or the error message (case-insensitive)')
    .addOption(new Option('--limit <n>', 'the most messages to touch').argParser(limitArgument));
}

/** The filter the flags and positional message ids describe. */
export function filterOf(flags: FilterFlags, messageIds: string[] = []): DeadLetterFilter {
  const ids = [...messageIds, ...(flags.id ?? [])];
  return parseDeadLetterFilter({
    queue: flags.queue,
    messageIds: ids.length > 0 ? ids : undefined,
    errorClass: flags.errorClass,
    type: flags.type,
    reason: flags.reason,
    since: flags.since,
    until: flags.until,
    text: flags.text,
  });
}

/** The selection of a replay or purge: the filter, plus `--all`. */
export function selectionOf(flags: FilterFlags, messageIds: string[]): DeadLetterSelection {
  return { ...filterOf(flags, messageIds), all: flags.all === true };
}

/** `--limit` as a number, or `fallback` when it is not given. */
export function limitOf(flags: FilterFlags, fallback?: number): number | undefined {
  if (flags.limit === undefined) return fallback;
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new InvalidDeadLetterQueryError(`--limit must be a positive integer, got '${flags.limit}'`);
  return limit;
}
