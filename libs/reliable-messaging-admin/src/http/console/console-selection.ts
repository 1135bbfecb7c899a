import { NO_MESSAGE_ID } from '../../dead-letter/dead-letter-operation';
import { parseDeadLetterFilter } from '../../dead-letter/dead-letter-filter';
import type { DeadLetterSelection } from '../../dead-letter/dead-letter-selection';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { parseOutboxFilter } from '../../outbox/outbox-filter';
import type { OutboxSelection } from '../../outbox/outbox-selection';
import { field, fields } from './console-http';
import type { FilterFields } from './views/messages.view';
import type { OutboxFilterFields } from './views/outbox.view';
import type { SelectionFields } from './views/operation.view';

const FILTER_NAMES = [
  'queue',
  'messageIds',
  'errorClass',
  'type',
  'reason',
  'since',
  'until',
  'text',
] as const;

/** The list filters of a query string, as the form shows them again. */
export function filterFieldsOf(source: Record<string, unknown>): FilterFields {
  return trimmedFields(source, [...FILTER_NAMES, 'limit']);
}

/** The selection fields a replay or purge carries from the list to its preview and on to its form: filters, ticked ids, `all`. */
export function selectionFieldsOf(source: Record<string, unknown>): SelectionFields {
  return withTicked(source, trimmedFields(source, FILTER_NAMES));
}

/** The selection the fields describe; throws InvalidDeadLetterQueryError as the API's does. */
export function selectionOf(selection: SelectionFields): DeadLetterSelection {
  const text = (name: string) => {
    const value = selection[name];
    return typeof value === 'string' ? value : undefined;
  };
  const ids = [
    ...(Array.isArray(selection.id) ? selection.id : selection.id ? [selection.id] : []),
    ...(text('messageIds') ?? '')
      .split(',')
      .map((id) => id.trim())
      .filter((id) => id !== ''),
  ];
  const filter = parseDeadLetterFilter({
    queue: text('queue'),
    messageIds: ids.length > 0 ? ids : undefined,
    errorClass: text('errorClass'),
    type: text('type'),
    reason: text('reason'),
    since: text('since'),
    until: text('until'),
    text: text('text'),
  });
  return { ...filter, all: text('all') === '1' };
}

/**
 * The selection a preview's confirming form carries: the ids its dry run found (and the queue), so that the
 * operation touches what the preview showed, never what came to match since. A dry run that found nothing, or a
 * dead letter without a message id, which no id names, carries the selection as given.
 */
export function pinnedSelection(selection: SelectionFields, ids: readonly string[]): SelectionFields {
  if (ids.length === 0 || ids.includes(NO_MESSAGE_ID)) return selection;
  return { ...(typeof selection.queue === 'string' ? { queue: selection.queue } : {}), id: [...ids] };
}

const OUTBOX_FILTER_NAMES = ['type', 'orderingKey', 'since', 'until', 'text'] as const;

/** The parked-row filters of a query string, as the form shows them again. */
export function outboxFilterFieldsOf(source: Record<string, unknown>): OutboxFilterFields {
  return trimmedFields(source, [...OUTBOX_FILTER_NAMES, 'limit']);
}

/** The selection fields an outbox retry or discard carries to its preview and form: filters, ticked row ids, `all`. */
export function outboxSelectionFieldsOf(source: Record<string, unknown>): SelectionFields {
  return withTicked(source, trimmedFields(source, OUTBOX_FILTER_NAMES));
}

/** The outbox selection the fields describe; throws InvalidDeadLetterQueryError as the API's does. */
export function outboxSelectionOf(selection: SelectionFields): OutboxSelection {
  const text = (name: string) => {
    const value = selection[name];
    return typeof value === 'string' ? value : undefined;
  };
  const ids = Array.isArray(selection.id) ? selection.id : selection.id ? [selection.id] : [];
  const filter = parseOutboxFilter({
    ids: ids.length > 0 ? ids : undefined,
    type: text('type'),
    orderingKey: text('orderingKey'),
    since: text('since'),
    until: text('until'),
    text: text('text'),
  });
  return { ...filter, all: text('all') === '1' };
}

/** The named fields that hold more than blanks, trimmed. */
function trimmedFields<N extends string>(
  source: Record<string, unknown>,
  names: readonly N[],
): Partial<Record<N, string>> {
  const found: Partial<Record<N, string>> = {};
  for (const name of names) {
    const value = field(source, name)?.trim();
    if (value) found[name] = value;
  }
  return found;
}

/** The filter with the ticked ids (`id`, any number of times) and `all`, as the source gives them. */
function withTicked(source: Record<string, unknown>, filter: SelectionFields): SelectionFields {
  const ids = fields(source, 'id');
  return {
    ...filter,
    ...(ids.length > 0 ? { id: ids } : {}),
    ...(field(source, 'all') === '1' ? { all: '1' } : {}),
  };
}

/** A list page's `limit` field as a number from 1 to `max` (`max` when not given); throws InvalidDeadLetterQueryError otherwise. */
export function listLimit(value: string | undefined, max: number): number {
  const limit = value === undefined ? max : Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new InvalidDeadLetterQueryError(`'limit' must be an integer from 1 to ${max}`);
  }
  return limit;
}
