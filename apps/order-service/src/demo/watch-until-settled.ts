import type { ChannelModel } from 'amqplib';
import { countMessages } from './dead-letter-reader';
import type { DemoContext } from './demo-step';
import type { ProgressDisplay, ProgressSnapshot } from './progress-display';

const POLL_INTERVAL_MS = 250;

/** What {@link watchUntilSettled} polls and until when. */
export interface SettleWatch {
  context: DemoContext;
  model: ChannelModel;
  deadLetterQueues: readonly string[];
  /** Orders the steps will place. */
  total: number;
  /** True once every step has finished sending. */
  stepsDone: () => boolean;
  startedAt: number;
  deadline: number;
  progress: ProgressDisplay;
}

/**
 * Polls the app's counts and the dead-letter queues, drawing the progress line, until the steps are done, every
 * accepted order is shipped with its receipt and every planted dead letter has arrived; or until the deadline
 * or an interruption. Resolves with whether everything settled.
 */
export async function watchUntilSettled(watch: SettleWatch): Promise<boolean> {
  const { context, progress } = watch;
  let snapshot: ProgressSnapshot = {
    placed: 0,
    total: watch.total,
    paid: 0,
    shipped: 0,
    receipts: 0,
    deadLetters: 0,
    elapsedMs: 0,
  };
  let settled = false;
  while (!settled && Date.now() < watch.deadline && !context.signal.aborted) {
    const stats = await context.api.stats();
    const deadLetters = await countMessages(watch.model, watch.deadLetterQueues);
    const accepted = context.ledger.orderIds.length;
    snapshot = {
      placed: accepted,
      total: watch.total,
      paid: stats.paid + stats.shipped,
      shipped: stats.shipped,
      receipts: stats.receiptsSent,
      deadLetters,
      elapsedMs: Date.now() - watch.startedAt,
    };
    settled =
      watch.stepsDone() &&
      stats.shipped >= accepted &&
      stats.receiptsSent >= accepted &&
      deadLetters >= context.ledger.expectedDeadLetters.length;
    if (settled) break;
    progress.update(snapshot);
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  progress.stop(snapshot);
  return settled;
}
