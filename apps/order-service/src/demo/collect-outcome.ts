import type { ChannelModel } from 'amqplib';
import { readDeadLetters } from './dead-letter-reader';
import type { DemoOutcome } from './demo-report';
import type { DemoContext } from './demo-step';
import { runBounded } from './run-bounded';

/**
 * Gathers what the report judges: every accepted order read back one by one (not just counted), everything in
 * the dead-letter queues, and the steps' own checks.
 */
export async function collectOutcome(
  context: DemoContext,
  model: ChannelModel,
  deadLetterQueues: readonly string[],
  startedAt: number,
): Promise<Omit<DemoOutcome, 'settled' | 'timeoutSeconds' | 'namespace'>> {
  const { api, ledger } = context;
  const unfinishedOrders: DemoOutcome['unfinishedOrders'] = [];
  await runBounded(ledger.orderIds.length, 20, async (index) => {
    const id = ledger.orderIds[index];
    const order = await api.getOrder(id);
    if (!order) unfinishedOrders.push({ id, state: 'missing' });
    else if (order.status !== 'shipped' || !order.receiptSent) {
      unfinishedOrders.push({
        id,
        state: `${order.status}, ${order.receiptSent ? 'receipt sent' : 'no receipt'}`,
      });
    }
  });
  const checkProblems: string[] = [];
  const checkSummaries: DemoOutcome['checkSummaries'] = [];
  for (const check of ledger.checks) {
    const result = await check.verify().catch((error: unknown) => ({
      summary: 'could not be checked',
      problem: error instanceof Error ? error.message : String(error),
    }));
    checkSummaries.push({ name: check.name, summary: result.summary });
    if (result.problem) checkProblems.push(`${check.name}: ${result.problem}`);
  }
  return {
    elapsedMs: Date.now() - startedAt,
    stats: await api.stats(),
    ledger,
    unfinishedOrders,
    deadLetters: await readDeadLetters(model, deadLetterQueues),
    checkProblems,
    checkSummaries,
  };
}
