import { describe, expect, it } from '@jest/globals';
import type { FaultRow } from './fault-cycle';
import { faultTableProblems, formatFaultTable, formatFaultTableMarkdown } from './fault-table';

function row(overrides: Partial<FaultRow> = {}): FaultRow {
  return {
    fault: 'pg-restart',
    accepted: 250,
    settled: 250,
    paidTwice: 0,
    receiptsTwice: 0,
    lost: 0,
    sagasStuck: 0,
    orderViolations: 0,
    deadLettered: 0,
    wrongDeadLetters: [],
    recoveryMs: 1234,
    repeatedReceiptCalls: 0,
    notes: [],
    problems: [],
    ...overrides,
  };
}

describe('the fault table', () => {
  it('prints one aligned line per fault under its header', () => {
    const lines = formatFaultTable([row(), row({ fault: 'poison', deadLettered: 1, recoveryMs: undefined })]);

    expect(lines).toEqual([
      'fault       accepted  settled  paid twice  receipts twice  lost  sagas stuck  order violations  dead-lettered  recovered in',
      'pg-restart       250      250           0               0     0            0                 0              0         1.2 s',
      'poison           250      250           0               0     0            0                 0              1         never',
    ]);
  });

  it('prints Markdown for the docs', () => {
    expect(formatFaultTableMarkdown([row()])[2]).toBe(
      '| pg-restart | 250 | 250 | 0 | 0 | 0 | 0 | 0 | 0 | 1.2 s |',
    );
  });

  it('passes a clean run, an expected dead letter included', () => {
    expect(faultTableProblems([row(), row({ fault: 'poison', deadLettered: 1 })])).toEqual([]);
  });

  it.each<[string, Partial<FaultRow>, string]>([
    ['a loss', { settled: 249, lost: 1 }, 'pg-restart: 1 accepted order(s) never settled'],
    ['a double charge', { paidTwice: 2 }, 'pg-restart: 2 order(s) charged twice'],
    ['a saga that never completed', { sagasStuck: 1 }, 'pg-restart: 1 order saga(s) never completed'],
    ['a second receipt', { receiptsTwice: 1 }, 'pg-restart: 1 order(s) sent two receipts'],
    [
      'an order handled out of order',
      { orderViolations: 3 },
      'pg-restart: 3 order(s) handled out of order by an ordered consumer',
    ],
    [
      'a wrong dead letter',
      { deadLettered: 1, wrongDeadLetters: ['q.dlq redelivery-limit m-1: crashed'] },
      'pg-restart: wrong dead letter: q.dlq redelivery-limit m-1: crashed',
    ],
    [
      'a fault that did not run',
      { error: 'no alarm' },
      'pg-restart: the fault did not run as meant: no alarm',
    ],
    ['a problem the fault found', { problems: ['RSS grew 31%'] }, 'pg-restart: RSS grew 31%'],
  ])('fails on %s', (_what, overrides, problem) => {
    expect(faultTableProblems([row(overrides)])).toEqual([problem]);
  });

  it('marks a row with a wrong dead letter', () => {
    expect(formatFaultTable([row({ deadLettered: 2, wrongDeadLetters: ['x'] })])[1]).toContain('2 (wrong)');
  });
});
