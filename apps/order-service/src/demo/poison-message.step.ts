import type { DeadLetterOperationResult, DeadLetterSummary } from 'nestjs-reliable-messaging-admin';
import { openDeadLetterTool } from './dead-letter-tool';
import type { DemoContext, DemoStep } from './demo-step';
import { pollUntil } from './poll-until';
import { plantPoisonOrder } from './poison-order';
import { DEFAULT_RETRY_MAX_ATTEMPTS } from '../config/app-config';

/** How long the step waits for the message to be dead-lettered, and then for the fixed one to be handled. */
const WAIT_MS = 30_000;

/** What happened to the poison message, for the check. */
interface PoisonOutcome {
  deadLetter?: DeadLetterSummary;
  replay?: DeadLetterOperationResult;
  error?: string;
}

/**
 * A poison message, fixed and replayed. A producer writes an order straight to the database and announces it
 * with an OrderPlaced whose order id is wrong, so the order saga fails with OrderNotFoundError on every attempt
 * (retryable: the order might still be on its way) until the message is dead-lettered as `attempts-exhausted`.
 * The step then does what an operator would with `npm run dlq -- edit`: through the module's
 * DeadLetterOperations it corrects the order id in the body and replays it (audited as `edit-replay`). The
 * order must then be paid, shipped and sent its receipt.
 */
export class PoisonMessageStep implements DemoStep {
  readonly title =
    'an OrderPlaced with a wrong order id, which the order saga can never handle: dead-lettered after its retries, then fixed and replayed';

  async run({ appEnv, channel, database, ledger, names, signal, api }: DemoContext): Promise<void> {
    const queue = names.queues.sagaPlaced;
    const maxAttempts = Number(appEnv.RETRY_MAX_ATTEMPTS ?? DEFAULT_RETRY_MAX_ATTEMPTS);
    const { orderId, wrongId, messageId, body } = await plantPoisonOrder(
      database,
      channel,
      names.exchange,
      'demo-poison',
    );
    ledger.orderIds.push(orderId);

    const outcome: PoisonOutcome = {};
    ledger.checks.push({
      name: 'poison message',
      verify: () => this.verify(outcome, { messageId, orderId, queue, maxAttempts, api, database }),
    });
    const tool = await openDeadLetterTool(appEnv);
    try {
      outcome.deadLetter = await pollUntil(
        async () =>
          (await tool.operations.list({ queue, messageIds: [messageId] }, { limit: 1 })).deadLetters[0],
        WAIT_MS,
        signal,
      );
      if (!outcome.deadLetter) return;
      outcome.replay = await tool.operations.editAndReplay(queue, messageId, body(orderId), {
        actor: 'demo',
        note: `order id corrected from ${wrongId} to ${orderId}`,
      });
    } catch (error) {
      outcome.error = error instanceof Error ? error.message : String(error);
    } finally {
      await tool.close().catch(() => undefined);
    }
    // The order is one of the run's: the demo waits for it to settle like any other.
  }

  private async verify(
    outcome: PoisonOutcome,
    run: { messageId: string; orderId: string; queue: string; maxAttempts: number } & Pick<
      DemoContext,
      'api' | 'database'
    >,
  ): Promise<{ summary: string; problem?: string }> {
    const { deadLetter, replay } = outcome;
    if (outcome.error) return { summary: 'failed', problem: outcome.error };
    if (!deadLetter) {
      return {
        summary: 'never dead-lettered',
        problem: `not in ${run.queue}.dlq within ${WAIT_MS / 1000} s`,
      };
    }
    const audit = replay?.auditId
      ? (
          await run.database.query<{ action: string; outcome: string }>(
            'SELECT action, outcome FROM rm_dead_letter_audit WHERE id = $1',
            [replay.auditId],
          )
        ).rows[0]
      : undefined;
    const handled = await run.database.query(
      'SELECT 1 FROM rm_inbox WHERE consumer = $1 AND message_id = $2',
      [run.queue, run.messageId],
    );
    const order = await run.api.getOrder(run.orderId);
    const final = order
      ? `${order.status}${order.receiptSent ? ', receipt sent' : ', no receipt'}`
      : 'missing';
    const summary =
      `dead-lettered as ${deadLetter.reason} after ${deadLetter.attempts ?? '?'} attempts (${deadLetter.errorClass ?? '?'}); ` +
      `order id fixed and replayed, audit ${audit ? `${audit.action} ${audit.outcome}` : 'missing'}; ` +
      `handled ${handled.rowCount === 1 ? 'once' : `${handled.rowCount ?? 0} times`}, order ${final}`;
    const problems: string[] = [];
    if (deadLetter.reason !== 'attempts-exhausted')
      problems.push(`dead-lettered as '${deadLetter.reason}', expected 'attempts-exhausted'`);
    if (deadLetter.attempts !== run.maxAttempts)
      problems.push(`${deadLetter.attempts ?? 'no'} attempts, expected ${run.maxAttempts}`);
    if (!replay || replay.messageIds.length !== 1 || replay.failures.length > 0) {
      problems.push(`the replay did not go through: ${JSON.stringify(replay?.failures ?? [])}`);
    }
    if (audit?.action !== 'edit-replay' || audit.outcome !== 'completed')
      problems.push('no completed edit-replay audit record');
    if (handled.rowCount !== 1)
      problems.push(`the order saga's inbox holds ${handled.rowCount ?? 0} rows for it, expected 1`);
    if (order?.status !== 'shipped' || !order.receiptSent) problems.push(`its order is ${final}`);
    return { summary, problem: problems.length > 0 ? problems.join('; ') : undefined };
  }
}
