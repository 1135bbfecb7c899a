import { describe, expect, it } from '@jest/globals';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { narrowsOutboxSelection, parseOutboxFilter } from './outbox-filter';

const NOW = Date.parse('2026-05-01T12:00:00Z');

describe('parseOutboxFilter', () => {
  it('reads ids, type, ordering key, text and a time window given as an age and as ISO 8601', () => {
    expect(
      parseOutboxFilter(
        {
          ids: ['1042', '0196c6e2-0000-7000-8000-000000000000'],
          type: 'order.shipped',
          orderingKey: 'order-7',
          since: '2h',
          until: '2026-05-01T11:30:00Z',
          text: 'NO_ROUTE',
        },
        NOW,
      ),
    ).toEqual({
      ids: ['1042', '0196c6e2-0000-7000-8000-000000000000'],
      type: 'order.shipped',
      orderingKey: 'order-7',
      since: new Date('2026-05-01T10:00:00Z'),
      until: new Date('2026-05-01T11:30:00Z'),
      text: 'NO_ROUTE',
    });
  });

  it.each([
    ['an empty id list', { ids: [] }, "'ids' must be a list"],
    ['an id that is not a string', { ids: [7] }, "'ids' must be a list"],
    ['a malformed time', { since: 'yesterday' }, "'since' must be an ISO 8601 time"],
    ['a window that ends before it starts', { since: '1h', until: '2h' }, "'since' must be earlier"],
    ['a type that is not a string', { type: 3 }, "'type' must be a string"],
    [
      'a row id above the bigint maximum',
      { ids: ['9223372036854775808'] },
      "'9223372036854775808' is not an outbox row id: row ids run from 1 to 9223372036854775807",
    ],
    ['a row id of twenty digits', { ids: ['1', '99999999999999999999'] }, 'is not an outbox row id'],
    ['row id 0', { ids: ['0'] }, "'0' is not an outbox row id"],
  ])('refuses %s', (_what, input, message) => {
    expect(() => parseOutboxFilter(input, NOW)).toThrow(InvalidDeadLetterQueryError);
    expect(() => parseOutboxFilter(input, NOW)).toThrow(message);
  });

  it('takes the largest bigint as a row id, and text that is not all digits as a message id', () => {
    expect(parseOutboxFilter({ ids: ['9223372036854775807', '0042', 'msg-1'] }).ids).toEqual([
      '9223372036854775807',
      '0042',
      'msg-1',
    ]);
  });

  it('counts an empty filter as no selection, and any field as one', () => {
    expect(narrowsOutboxSelection(parseOutboxFilter({}))).toBe(false);
    expect(narrowsOutboxSelection(parseOutboxFilter({ orderingKey: 'k' }))).toBe(true);
  });
});
