import type { DeadLetter } from 'nestjs-reliable-messaging/operations';
import { claimedQueueWarning } from '../dead-letter/claimed-queue-warning';
import { describeDeadLetter } from '../dead-letter/dead-letter-view';

/** One dead letter in full, for a reader: a field per line, then its headers, body and stack. */
export function describeForHumans(d: DeadLetter): string {
  const { headers, bodyEncoding, body } = describeDeadLetter(d, true);
  const lines = [
    `message id      ${d.messageId ?? '-'}`,
    `type            ${d.type ?? '-'}`,
    `queue           ${d.queue} (dead-letter queue ${d.deadLetterQueue})`,
    ...(d.claimedQueue !== undefined ? [`WARNING         ${claimedQueueWarning(d)}`] : []),
    `reason          ${d.reason}`,
    `error           ${d.errorClass ?? '-'}: ${d.errorMessage ?? '-'}`,
    `attempts        ${d.attempts ?? '-'} (dead-lettered ${d.deadLetterCount} time(s))`,
    `first failure   ${d.firstFailureAt?.toISOString() ?? '-'}`,
    `dead-lettered   ${d.deadLetteredAt?.toISOString() ?? '-'} on ${d.host ?? '-'} by ${d.handler ?? '-'}`,
    `published to    ${d.exchange ?? '-'} with routing key ${d.routingKey ?? '-'}`,
    `idempotency key ${d.idempotencyKey ?? '-'}`,
    `correlation id  ${d.correlationId ?? '-'}`,
    '',
    'headers',
    JSON.stringify(headers, null, 2),
    '',
    `body (${String(bodyEncoding)})`,
    typeof body === 'string' ? body : JSON.stringify(body, null, 2),
  ];
  if (d.errorStack) lines.push('', 'stack', d.errorStack);
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
