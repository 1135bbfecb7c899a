import { describe, expect, it } from '@jest/globals';
import { checkHistory, describeViolation, type HandlingRow } from './history-checker';

/** A history from `key:seq` (or `key:seq@attempt/replica`) entries, in handling order. */
function history(...entries: string[]): HandlingRow[] {
  return entries.map((entry, i) => {
    const [message, at = '1/r1'] = entry.split('@');
    const [key, seq] = message.split(':');
    const [attempt, replica] = at.split('/');
    return { key, seq: Number(seq), attempt: Number(attempt), replica, position: i + 1 };
  });
}

const KEYS = ['a', 'b'];

describe('history checker', () => {
  it('passes a history where every key is handled in order, keys interleaved, retries included', () => {
    const rows = history('a:1', 'b:1', 'b:2@2/r2', 'a:2', 'a:3', 'b:3');
    expect(checkHistory(rows, { keys: KEYS, perKey: 3 })).toEqual({
      handlings: 6,
      messages: 6,
      violations: [],
      replays: [],
    });
  });

  it('reads the handling order from the position, not from the order of the rows', () => {
    const rows = history('a:1', 'a:2', 'a:3').reverse();
    expect(checkHistory(rows, { keys: ['a'], perKey: 3 }).violations).toEqual([]);
  });

  it.each([
    {
      kind: 'out-of-order',
      rows: history('a:1', 'a:3', 'a:2@2/r2', 'a:4'),
      expected: { key: 'a', seq: 2, before: [1, 3], attempt: 2, replica: 'r2', position: 3 },
    },
    {
      kind: 'duplicate',
      rows: history('a:1', 'a:2', 'a:2@1/r2', 'a:3', 'a:4'),
      expected: { key: 'a', seq: 2, before: [1, 2], replica: 'r2', position: 3 },
    },
    {
      kind: 'missing',
      rows: history('a:1', 'a:2', 'a:4'),
      expected: { key: 'a', seq: 3, before: [1, 2] },
    },
    {
      kind: 'unexpected',
      rows: history('a:1', 'a:2', 'a:3', 'a:4', 'a:5'),
      expected: { key: 'a', seq: 5, before: [1, 2, 3, 4] },
    },
    {
      kind: 'dead-letter-handled',
      rows: history('a:1', 'a:2', 'a:4'),
      deadLettered: ['a:3', 'a:4'],
      expected: { key: 'a', seq: 4, before: [1, 2] },
    },
    {
      kind: 'replay-not-after',
      rows: history('a:1', 'a:3', 'a:2', 'a:4'),
      deadLettered: ['a:2'],
      replayed: ['a:2'],
      expected: { key: 'a', seq: 2, before: [1, 3], position: 3 },
    },
  ])(
    'reports $kind with the key and the sequence numbers before it',
    ({ kind, rows, deadLettered, replayed, expected }) => {
      const report = checkHistory(rows, {
        keys: ['a'],
        perKey: 4,
        deadLettered: new Set(deadLettered),
        replayed: new Set(replayed),
      });
      expect(report.violations.filter((violation) => violation.kind === kind)).toEqual([
        expect.objectContaining(expected),
      ]);
    },
  );

  it('counts only the first handling of a message for order, after a duplicate', () => {
    const report = checkHistory(history('a:1', 'a:2', 'a:3', 'a:2'), { keys: ['a'], perKey: 3 });
    expect(report.violations.map((violation) => violation.kind)).toEqual(['duplicate']);
  });

  it('exempts exactly the replayed messages, and reports each with where it landed', () => {
    const rows = history('a:1', 'a:3', 'a:4', 'b:1', 'b:2', 'a:2@1/r3');
    const report = checkHistory(rows, {
      keys: KEYS,
      perKey: 4,
      deadLettered: new Set(['a:2', 'b:3', 'b:4']),
      replayed: new Set(['a:2']),
    });
    expect(report.violations).toEqual([]);
    expect(report.replays).toEqual([{ key: 'a', seq: 2, handledAfter: true, position: 6 }]);
  });

  it('reports a replayed message that never arrived as missing', () => {
    const report = checkHistory(history('a:1', 'a:3'), {
      keys: ['a'],
      perKey: 3,
      deadLettered: new Set(['a:2']),
      replayed: new Set(['a:2']),
    });
    expect(report.violations).toEqual([{ kind: 'missing', key: 'a', seq: 2, before: [1, 3] }]);
    expect(report.replays).toEqual([{ key: 'a', seq: 2, handledAfter: false, position: undefined }]);
  });

  it('describes a violation on one line', () => {
    const [violation] = checkHistory(history('a:2', 'a:1@3/r2'), { keys: ['a'], perKey: 2 }).violations;
    expect(describeViolation(violation)).toBe(
      'out-of-order: key a: … 2 → 1 (attempt 3, replica r2, position 2)',
    );
  });
});
