import type { DeadLetter } from '../../dead-letter/dead-letter-record';
import { describeDeadLetter } from '../dead-letter-view';

/** One dead letter in full, for a reader: a field per line, then its headers, body and stack. */
export function describeForHumans(deadLetter: DeadLetter): string {
  const d = describeDeadLetter(deadLetter, true);
  const lines = [
    `message id      ${String(d.messageId ?? '-')}`,
    `type            ${String(d.type ?? '-')}`,
    `queue           ${String(d.queue)} (dead-letter queue ${String(d.deadLetterQueue)})`,
    `reason          ${String(d.reason)}`,
    `error           ${String(d.errorClass ?? '-')}: ${String(d.errorMessage ?? '-')}`,
    `attempts        ${String(d.attempts ?? '-')} (dead-lettered ${String(d.deadLetterCount)} time(s))`,
    `first failure   ${String(d.firstFailureAt ?? '-')}`,
    `dead-lettered   ${String(d.deadLetteredAt ?? '-')} on ${String(d.host ?? '-')} by ${String(d.handler ?? '-')}`,
    `published to    ${String(d.exchange ?? '-')} with routing key ${String(d.routingKey ?? '-')}`,
    `idempotency key ${String(d.idempotencyKey ?? '-')}`,
    `correlation id  ${String(d.correlationId ?? '-')}`,
    '',
    'headers',
    JSON.stringify(d.headers, null, 2),
    '',
    `body (${String(d.bodyEncoding)})`,
    typeof d.body === 'string' ? d.body : JSON.stringify(d.body, null, 2),
  ];
  if (d.errorStack) lines.push('', 'stack', String(d.errorStack));
  return lines.join('\n');
}

/** Rows under a header, each column as wide as its widest cell. */
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

/** The text cut to `length` characters, an ellipsis marking the cut. */
export function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** An age in the largest unit that keeps it readable: `90s`, `45m`, `5h`, `3d`. */
export function age(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}
