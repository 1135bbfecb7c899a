import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { narrowsOutboxSelection, type OutboxFilter } from './outbox-filter';

/** Which parked rows a retry or discard applies to: a filter, or `all` for every parked row. */
export interface OutboxSelection extends OutboxFilter {
  /** Required to retry or discard without any filter. Default: false. */
  all?: boolean;
}

/** Refuses a retry or discard of every parked row that does not say `all`, so no typo empties the outbox. */
export function requireOutboxSelection(verb: 'retry' | 'discard', selection: OutboxSelection): void {
  const { all, ...filter } = selection;
  if (!narrowsOutboxSelection(filter) && all !== true) {
    throw new InvalidDeadLetterQueryError(
      `an outbox ${verb} needs a selection: ids, a filter (type, ordering key, time window, text), or 'all' for every parked row`,
    );
  }
}
