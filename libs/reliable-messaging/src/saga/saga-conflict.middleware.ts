import { Logger } from '@nestjs/common';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { SagaConflictError } from '../errors/saga-conflict.error';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { errorMessage } from '../util/error-text';
import { sqlStateOf } from '../database/database-errors';

const logger = new Logger('ReliableMessaging');

/**
 * SQLSTATEs of a transaction that lost a race in PostgreSQL itself: a serialization failure (what an UPDATE of a
 * row changed since the snapshot raises under REPEATABLE READ or SERIALIZABLE, instead of matching nothing) and a
 * deadlock (two steps of one instance writing the app's rows in opposite orders).
 */
const RACE_SQLSTATES = new Set(['40001', '40P01']);

/** Whether a step's run failed because another step won the race for its instance, not through its message. */
function lostRace(error: unknown): boolean {
  if (error instanceof SagaConflictError) return true;
  const state = sqlStateOf(error);
  return state !== undefined && RACE_SQLSTATES.has(state);
}

/**
 * For a `@SagaStep()` consumer: a step that lost the race for its instance (SagaConflictError, or PostgreSQL's
 * serialization failure or deadlock; its transaction rolled back) runs again at once as the same attempt, in a
 * fresh transaction that reads the instance as the winner left it, and locks it (the saga stage reads it FOR UPDATE on a re-run): a step that lost once cannot
 * lose again to a step still reading, so under contention for one instance no step starves. The conflict is no
 * fault of the message, so it spends no attempt and is not requeued; after the saga's `maxConflictReruns` it
 * goes on up as an ordinary failure, which the retry policy counts. Each lost race is counted
 * (`rm_saga_conflicts_total`).
 *
 * Outside the deadline (each run gets a deadline of its own) and inside the rate limit and the database pause.
 */
export function sagaConflictStage(
  consumer: Pick<ConsumerPlan, 'name' | 'saga'>,
  { metrics }: Pick<StageDependencies, 'metrics'>,
): MessageMiddleware | undefined {
  const step = consumer.saga;
  if (!step) return undefined;
  return (next) => async (delivery) => {
    for (let rerun = 1; ; rerun++) {
      try {
        await next(delivery);
        return;
      } catch (error) {
        if (!lostRace(error) || delivery.isSettled || delivery.lingering) throw error;
        metrics.recordSagaConflict(delivery);
        if (rerun > step.maxConflictReruns) {
          logger.warn(
            `${consumer.name}: ${errorMessage(error)}; still conflicting after ${step.maxConflictReruns} re-runs`,
          );
          throw error;
        }
        logger.debug(`${consumer.name}: ${errorMessage(error)}; running the step again (${rerun})`);
        delivery.retryInPlace(delivery.attempt);
        delivery.reruns = rerun;
      }
    }
  };
}
