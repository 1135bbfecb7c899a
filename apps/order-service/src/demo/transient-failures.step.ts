import { metricTotal } from './app-metrics';
import { countMessages } from './dead-letter-reader';
import type { DemoContext, DemoStep } from './demo-step';

/**
 * Runs the app with its stand-in receipt service failing a share of calls transiently
 * (`RECEIPT_FAILURE_RATE`). Every failed receipt call must be retried, every order still get its receipt, and
 * nothing reach the receipt consumer's dead-letter queue.
 */
export class TransientFailuresStep implements DemoStep {
  readonly appEnv: Readonly<Record<string, string>>;

  constructor(private readonly failureRate: number) {
    this.appEnv = { RECEIPT_FAILURE_RATE: String(failureRate) };
  }

  get title(): string {
    return `the receipt service failing ${Math.round(this.failureRate * 100)}% of calls transiently (RECEIPT_FAILURE_RATE=${this.failureRate}), to be retried`;
  }

  async run({ api, model, ledger, names }: DemoContext): Promise<void> {
    const receipt = names.queues.receipt;
    ledger.checks.push({
      name: 'transient failures',
      verify: async () => {
        const page = await api.metrics();
        const failed = metricTotal(page, 'rm_messages_failed_total', { queue: receipt });
        const retried = metricTotal(page, 'rm_messages_retried_total', { queue: receipt });
        const deadLetters = await countMessages(model, [`${receipt}.dlq`]);
        const { receiptsSent } = await api.stats();
        const orders = ledger.orderIds.length;
        const summary =
          `${failed} receipt attempts failed, ${retried} retried (rm_messages_retried_total); ` +
          `${receiptsSent}/${orders} receipts sent, ${deadLetters} in receipt.order-shipped.dlq`;
        const problems: string[] = [];
        if (failed === 0 && this.failureRate > 0)
          problems.push('no receipt call failed, so nothing was retried');
        if (retried !== failed) problems.push(`${failed - retried} failed attempt(s) were not retried`);
        if (receiptsSent < orders) problems.push(`${orders - receiptsSent} receipt(s) not sent`);
        if (deadLetters > 0) problems.push(`${deadLetters} message(s) in receipt.order-shipped.dlq`);
        return { summary, problem: problems.length > 0 ? problems.join('; ') : undefined };
      },
    });
  }
}
