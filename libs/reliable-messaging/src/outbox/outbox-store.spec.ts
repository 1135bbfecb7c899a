import { describe, expect, it } from '@jest/globals';
import { keysToRecheck, type ClaimedRow } from './outbox-store.service';

/** A claimed row: `[id, key, previous pending row of its key in the claim's snapshot]`. */
type Row = [id: string, key: string | null, previousId: string | null];

const claimed = (rows: Row[]): ClaimedRow[] =>
  rows.map(([id, orderingKey, previousId]) => ({
    id,
    orderingKey,
    previousId,
    attempts: 0,
    message: {} as ClaimedRow['message'],
  }));

describe('keysToRecheck', () => {
  it.each<[string, Row[], string[]]>([
    ['nothing claimed', [], []],
    [
      'rows without a key',
      [
        ['1', null, null],
        ['2', null, null],
      ],
      [],
    ],
    [
      'each key from its first pending row on, each row right after the one before',
      [
        ['1', 'a', null],
        ['2', 'b', null],
        ['3', 'a', '1'],
        ['5', 'a', '3'],
        ['6', 'b', '2'],
      ],
      [],
    ],
    [
      'a key whose first claimed row has a pending row before it',
      [
        ['4', 'a', '2'],
        ['5', 'b', null],
      ],
      ['a'],
    ],
    [
      'a key with a pending row between two claimed ones',
      [
        ['1', 'a', null],
        ['2', 'b', null],
        ['5', 'a', '3'],
        ['6', 'b', '2'],
      ],
      ['a'],
    ],
    [
      'rows out of id order',
      [
        ['5', 'a', '3'],
        ['3', 'a', null],
      ],
      ['a'],
    ],
  ])('%s', (_, rows, keys) => {
    expect(keysToRecheck(claimed(rows))).toEqual(keys);
  });
});
