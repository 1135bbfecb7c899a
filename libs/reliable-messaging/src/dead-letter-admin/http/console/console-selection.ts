import { parseDeadLetterFilter } from '../../dead-letter-filter';
import type { DeadLetterSelection } from '../../dead-letter-selection';
import { field, fields } from './console-http';
import type { FilterFields } from './views/messages.view';
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
  const filter: FilterFields = {};
  for (const name of [...FILTER_NAMES, 'limit'] as const) {
    const value = field(source, name)?.trim();
    if (value) filter[name] = value;
  }
  return filter;
}

/** The selection fields a replay or purge carries from the list to its preview and on to its form: filters, ticked ids, `all`. */
export function selectionFieldsOf(source: Record<string, unknown>): SelectionFields {
  const { limit: _limit, ...filter } = filterFieldsOf(source);
  const ids = fields(source, 'id');
  return {
    ...filter,
    ...(ids.length > 0 ? { id: ids } : {}),
    ...(field(source, 'all') === '1' ? { all: '1' } : {}),
  };
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
