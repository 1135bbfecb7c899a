import { describe, expect, it } from '@jest/globals';
import { markable } from './outbox-relay';

const row = (id: string, key: string | null = null): { id: string; ordering_key: string | null } => ({
  id,
  ordering_key: key,
});

describe('the hand-written relay: which claimed rows a round may mark published', () => {
  it.each([
    [
      'every row confirmed: all of them',
      [row('1'), row('2', 'a'), row('3', 'a')],
      ['1', '2', '3'],
      ['1', '2', '3'],
    ],
    [
      'a keyless row unconfirmed: only that one stays pending',
      [row('1'), row('2'), row('3')],
      ['1', '3'],
      ['1', '3'],
    ],
    [
      "a key's row unconfirmed: its later rows stay pending too, even confirmed",
      [row('1', 'a'), row('2', 'a'), row('3', 'a')],
      ['1', '3'],
      ['1'],
    ],
    [
      "another key's rows and keyless rows are not held back by it",
      [row('1', 'a'), row('2', 'b'), row('3', 'a'), row('4'), row('5', 'b')],
      ['2', '3', '4', '5'],
      ['2', '4', '5'],
    ],
    ['nothing confirmed: nothing marked', [row('1', 'a'), row('2')], [], []],
  ])('%s', (_scenario, rows, confirmed, expected) => {
    expect(markable(rows, new Set(confirmed))).toEqual(expected);
  });
});
