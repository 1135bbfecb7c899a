import type { OrderStats } from '../orders/order-view';
import type { DeadLetterSeen } from './dead-letter-reader';
import type { DemoLedger } from './demo-ledger';

/** How the demo ended, as the report reads it. */
export interface DemoOutcome {
  /** Whether the steps finished and everything they expected arrived before the timeout. */
  settled: boolean;
  timeoutSeconds: number;
  elapsedMs: number;
  /** The app's counts at the end. */
  stats: OrderStats;
  ledger: DemoLedger;
  /** Accepted orders not in their final state at the end, with what was found. */
  unfinishedOrders: Array<{ id: string; state: string }>;
  /** Everything in the dead-letter queues at the end. */
  deadLetters: DeadLetterSeen[];
  /** Problems reported by the steps' own checks. */
  checkProblems: string[];
  /** What each of the steps' checks measured, in the order they were added. */
  checkSummaries: Array<{ name: string; summary: string }>;
  /** The run's messaging namespace, left out of queue names in the summary. Default: none. */
  namespace?: string;
}

/** The summary's lines, and whether everything the steps expected happened. */
export interface DemoReport {
  ok: boolean;
  lines: string[];
}

const LISTED = 10;

/** Compares what happened with what the steps expected and writes the summary. */
export function buildReport(outcome: DemoOutcome): DemoReport {
  const { stats, ledger, deadLetters } = outcome;
  const problems: string[] = [];

  if (!outcome.settled) problems.push(`not settled within the ${outcome.timeoutSeconds} s timeout`);
  if (ledger.rejectedOrders.length > 0) {
    problems.push(`${ledger.rejectedOrders.length} order(s) not accepted: ${list(ledger.rejectedOrders)}`);
  }
  if (outcome.unfinishedOrders.length > 0) {
    problems.push(
      `${outcome.unfinishedOrders.length} order(s) not shipped with a receipt: ` +
        list(outcome.unfinishedOrders.map((order) => `${order.id} (${order.state})`)),
    );
  }

  const unmatched = [...deadLetters];
  const explained = new Map<DeadLetterSeen, string>();
  for (const expected of ledger.expectedDeadLetters) {
    const index = unmatched.findIndex(
      (seen) => seen.messageId === expected.messageId && seen.queue === expected.queue,
    );
    if (index < 0) {
      problems.push(`${expected.description} (${expected.messageId}) is not in ${expected.queue}`);
      continue;
    }
    const [seen] = unmatched.splice(index, 1);
    explained.set(seen, expected.description);
    if (seen.reason !== expected.reason) {
      problems.push(
        `${expected.description} was dead-lettered as '${seen.reason}', expected '${expected.reason}'`,
      );
    }
  }
  for (const seen of unmatched) {
    problems.push(
      `unexpected dead letter in ${seen.queue}: ${seen.reason} (${seen.errorMessage.slice(0, 160)})`,
    );
  }
  problems.push(...outcome.checkProblems);

  const seconds = (outcome.elapsedMs / 1000).toFixed(1);
  const lines = [
    `Summary after ${seconds} s`,
    row('orders placed', ledger.orderIds.length),
    row('orders paid', stats.paid + stats.shipped),
    row('orders shipped', stats.shipped),
    row('receipts sent', stats.receiptsSent),
    row('orders cancelled', stats.cancelled),
    row('dead-lettered', deadLetters.length),
    ...deadLetters.map((seen) => {
      const queue = outcome.namespace ? seen.queue.replace(`${outcome.namespace}.`, '') : seen.queue;
      return `    ${queue.padEnd(28)} ${seen.reason.padEnd(28)} ${explained.get(seen) ?? seen.errorMessage.slice(0, 60)}`;
    }),
    ...outcome.checkSummaries.map((check) => `  ${check.name.padEnd(20)} ${check.summary}`),
  ];
  if (problems.length === 0) {
    lines.push(
      '',
      `OK: all ${ledger.orderIds.length} orders were paid, shipped and sent a receipt, and the ` +
        `${ledger.expectedDeadLetters.length} bad message(s) were dead-lettered with the expected reasons` +
        (outcome.checkSummaries.length > 0
          ? `; ${outcome.checkSummaries.length} scenario check(s) held.`
          : '.'),
    );
  } else {
    lines.push('', `FAILED: ${problems.length} problem(s):`, ...problems.map((problem) => `  - ${problem}`));
  }
  return { ok: problems.length === 0, lines };
}

function row(label: string, value: number): string {
  return `  ${label.padEnd(16)} ${String(value).padStart(6)}`;
}

function list(items: string[]): string {
  const shown = items.slice(0, LISTED).join(', ');
  return items.length > LISTED ? `${shown} and ${items.length - LISTED} more` : shown;
}
