import type { FaultRow } from './fault-cycle';

const COLUMNS = [
  'fault',
  'accepted',
  'settled',
  'paid twice',
  'receipts twice',
  'lost',
  'sagas stuck',
  'order violations',
  'dead-lettered',
  'recovered in',
] as const;

/** The row's cells, in {@link COLUMNS} order. */
function cells(row: FaultRow): string[] {
  return [
    row.fault,
    String(row.accepted),
    String(row.settled),
    String(row.paidTwice),
    String(row.receiptsTwice),
    String(row.lost),
    String(row.sagasStuck),
    String(row.orderViolations),
    row.wrongDeadLetters.length > 0 ? `${row.deadLettered} (wrong)` : String(row.deadLettered),
    row.recoveryMs === undefined ? 'never' : `${(row.recoveryMs / 1000).toFixed(1)} s`,
  ];
}

/** The table as aligned plain text, one line per fault under a header line. */
export function formatFaultTable(rows: readonly FaultRow[]): string[] {
  const table = [[...COLUMNS], ...rows.map(cells)];
  const widths = COLUMNS.map((_, column) => Math.max(...table.map((line) => line[column].length)));
  return table.map((line) =>
    line
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column])))
      .join('  ')
      .trimEnd(),
  );
}

/** The table as Markdown, for docs/reliability.md. */
export function formatFaultTableMarkdown(rows: readonly FaultRow[]): string[] {
  const lines = rows.map((row) => `| ${cells(row).join(' | ')} |`);
  return [`| ${COLUMNS.join(' | ')} |`, `| ${COLUMNS.map(() => '---').join(' | ')} |`, ...lines];
}

/**
 * What makes the run fail, one line per problem: a loss, a double charge or receipt, an order handled out of
 * order, a wrong or missing dead letter, or a fault that could not be injected. Empty when the run passed.
 */
export function faultTableProblems(rows: readonly FaultRow[]): string[] {
  const problems: string[] = [];
  for (const row of rows) {
    if (row.error) problems.push(`${row.fault}: the fault did not run as meant: ${row.error}`);
    if (row.lost > 0) problems.push(`${row.fault}: ${row.lost} accepted order(s) never settled`);
    if (row.sagasStuck > 0) problems.push(`${row.fault}: ${row.sagasStuck} order saga(s) never completed`);
    if (row.paidTwice > 0) problems.push(`${row.fault}: ${row.paidTwice} order(s) charged twice`);
    if (row.receiptsTwice > 0) problems.push(`${row.fault}: ${row.receiptsTwice} order(s) sent two receipts`);
    if (row.orderViolations > 0) {
      problems.push(
        `${row.fault}: ${row.orderViolations} order(s) handled out of order by an ordered consumer`,
      );
    }
    for (const wrong of row.wrongDeadLetters) problems.push(`${row.fault}: wrong dead letter: ${wrong}`);
    for (const problem of row.problems) problems.push(`${row.fault}: ${problem}`);
  }
  return problems;
}
