import { describe, expect, it } from '@jest/globals';
import type { DeadLetterSeen } from './dead-letter-reader';
import { DemoLedger } from './demo-ledger';
import { buildReport, type DemoOutcome } from './demo-report';

const DLQ = 'demo-1.payment.order-placed.dlq';

/** Two accepted orders, both done, and one planted bad message that arrived as expected. */
function settledOutcome(): DemoOutcome {
  const ledger = new DemoLedger();
  ledger.orderIds.push('o-1', 'o-2');
  ledger.expectedDeadLetters.push({
    messageId: 'bad-1',
    queue: DLQ,
    reason: 'malformed-json',
    description: 'not JSON',
  });
  return {
    settled: true,
    timeoutSeconds: 45,
    elapsedMs: 4_200,
    stats: { orders: 2, placed: 0, paid: 0, shipped: 2, cancelled: 0, receiptsSent: 2 },
    ledger,
    unfinishedOrders: [],
    deadLetters: [
      { queue: DLQ, messageId: 'bad-1', reason: 'malformed-json', errorMessage: 'body is not valid JSON' },
    ],
    checkProblems: [],
    checkSummaries: [],
    namespace: 'demo-1',
  };
}

describe('buildReport', () => {
  it('passes when every order settled and exactly the planted dead letters arrived, and says so', () => {
    const report = buildReport(settledOutcome());

    expect(report.ok).toBe(true);
    expect(report.lines).toEqual([
      'Summary after 4.2 s',
      '  orders placed         2',
      '  orders paid           2',
      '  orders shipped        2',
      '  receipts sent         2',
      '  orders cancelled      0',
      '  dead-lettered         1',
      '    payment.order-placed.dlq     malformed-json               not JSON',
      '',
      'OK: all 2 orders were paid, shipped and sent a receipt, and the 1 bad message(s) were dead-lettered with the expected reasons.',
    ]);
  });

  it("prints each scenario check's summary line and counts the checks in the verdict", () => {
    const outcome = settledOutcome();
    outcome.checkSummaries.push({ name: 'duplicates', summary: '20 copies skipped' });

    const report = buildReport(outcome);

    expect(report.ok).toBe(true);
    expect(report.lines).toContain('  duplicates           20 copies skipped');
    expect(report.lines.at(-1)).toBe(
      'OK: all 2 orders were paid, shipped and sent a receipt, and the 1 bad message(s) were dead-lettered with the expected reasons; 1 scenario check(s) held.',
    );
  });

  const unexpected: DeadLetterSeen = {
    queue: DLQ,
    messageId: 'm-9',
    reason: 'handler-failed',
    errorMessage: 'order o-2 not found',
  };

  it.each<[string, (outcome: DemoOutcome) => void, string]>([
    [
      'an order that never finished',
      (o) => o.unfinishedOrders.push({ id: 'o-2', state: 'paid, no receipt' }),
      '1 order(s) not shipped with a receipt: o-2 (paid, no receipt)',
    ],
    [
      'an order the API refused',
      (o) => o.ledger.rejectedOrders.push('order #3: HTTP 500'),
      '1 order(s) not accepted: order #3: HTTP 500',
    ],
    [
      'a planted message that never arrived',
      (o) => o.deadLetters.splice(0, 1),
      'not JSON (bad-1) is not in ' + DLQ,
    ],
    [
      'a planted message refused for another reason',
      (o) => (o.deadLetters[0] = { ...o.deadLetters[0], reason: 'invalid-utf8' }),
      "not JSON was dead-lettered as 'invalid-utf8', expected 'malformed-json'",
    ],
    [
      'a dead letter nobody planted',
      (o) => o.deadLetters.push(unexpected),
      `unexpected dead letter in ${DLQ}: handler-failed (order o-2 not found)`,
    ],
    ['the timeout', (o) => (o.settled = false), 'not settled within the 45 s timeout'],
    [
      "a step's own check",
      (o) => o.checkProblems.push('duplicates: 2 charged twice'),
      'duplicates: 2 charged twice',
    ],
  ])('fails on %s, naming it', (_case, spoil, problem) => {
    const outcome = settledOutcome();
    spoil(outcome);

    const report = buildReport(outcome);

    expect(report.ok).toBe(false);
    expect(report.lines).toContain('FAILED: 1 problem(s):');
    expect(report.lines).toContain(`  - ${problem}`);
  });

  it('lists at most ten unfinished orders and counts the rest', () => {
    const outcome = settledOutcome();
    for (let i = 1; i <= 12; i++)
      outcome.unfinishedOrders.push({ id: `o-${i}`, state: 'placed, no receipt' });

    const problem = buildReport(outcome).lines.find((line) => line.includes('not shipped'));

    expect(problem).toMatch(/o-10 \(placed, no receipt\) and 2 more$/);
  });
});
