import { Logger } from '@nestjs/common';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { SagaConflictError } from '../errors/saga-conflict.error';
import { SagaRefusedError } from '../errors/saga-refused.error';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { correlationKey } from './saga-correlation';
import { serialiseState } from './saga-state';
import { SagaStepContext, type SagaStepRun } from './saga-step-context';
import type { SagaOutcome, SagaTimeout } from './saga-store';

const logger = new Logger('ReliableMessaging');

/**
 * The saga stage, innermost, for a `@SagaStep()` consumer: inside the inbox's transaction (after the message's
 * inbox row), it reads the correlation key from the validated message, loads the instance, applies the step's
 * policy when there is none or it has completed, runs the step with a SagaStepContext, then writes the state the
 * step left, checked, with a history row: one transaction for the inbox row, the step's own writes, its outbox
 * rows and the instance, committed before the ack.
 *
 * The write is optimistic: it inserts a new instance unless one exists for the key, or updates the instance if
 * it still has the version the step read (a re-run reads it locked, see saga-conflict.middleware.ts). When
 * another step got there first nothing is written and the stage throws SagaConflictError, which rolls the
 * transaction back; the conflict stage outside runs the step again.
 *
 * The instances live where the inbox does (`deps.sagaStore`): in `rm_saga`, or in memory for tests without a
 * database, where the rules above are the same and a failed run's timeouts are cancelled in place of a rollback.
 */
export function sagaStage(
  consumer: Pick<ConsumerPlan, 'saga'>,
  deps: Pick<StageDependencies, 'sagas' | 'sagaStore'>,
): MessageMiddleware | undefined {
  const step = consumer.saga;
  if (!step) return undefined;
  const store = deps.sagaStore;
  return (next) => async (delivery) => {
    const manager = delivery.manager;
    const envelope = delivery.envelope;
    if (!envelope) throw new Error('the saga stage runs after decoding');
    const key = correlationKey(step.correlate, delivery.payload as object, step.step);
    const found = await store.load(manager, step.saga, key, delivery.reruns > 0);
    const message = { messageId: envelope.messageId, messageType: envelope.type, step: step.step };
    const where = `${step.step}: message ${envelope.messageId} for saga '${step.saga}' instance '${key}'`;
    if (!found && step.onMissing !== 'start') {
      if (step.onMissing === 'ignore') {
        logger.debug(`${where}: no such instance; ignored (onMissing: 'ignore')`);
        return;
      }
      throw new SagaRefusedError(
        'saga-instance-missing',
        `${where}: no such instance (onMissing: 'dead-letter')`,
      );
    }
    if (found?.status === 'completed') {
      if (step.onCompleted === 'ignore') {
        logger.debug(`${where}: the instance has completed; ignored (onCompleted: 'ignore')`);
        await store.recordIgnored(manager, found, message);
        return;
      }
      throw new SagaRefusedError(
        'saga-instance-completed',
        `${where}: the instance has completed (onCompleted: 'dead-letter')`,
      );
    }
    const requested: string[] = [];
    const dropped: SagaTimeout[] = [];
    const run: SagaStepRun = {
      sagaName: step.saga,
      correlationKey: key,
      version: found?.version ?? 0,
      state: found?.state ?? step.initialState(),
      completing: false,
      // A timeout that arrives is no longer waited for.
      timeouts: (found?.timeouts ?? []).filter((timeout) => timeout.messageId !== envelope.messageId),
      requestTimeout: async (timeout, when) => {
        const { messageId } = await deps.sagas().publisher.publish(timeout, { ...when, manager });
        requested.push(messageId);
        const dueAt = 'deliverAt' in when ? when.deliverAt : new Date(deps.sagas().now() + when.delayMs);
        run.timeouts.push({ messageId, dueAt: dueAt.toISOString() });
        return messageId;
      },
      cancelTimeout: (messageId) => {
        const found = run.timeouts.find((timeout) => timeout.messageId === messageId);
        if (!found) return false;
        // A new array: a step may be walking `pendingTimeouts` (this one) as it cancels.
        run.timeouts = run.timeouts.filter((timeout) => timeout !== found);
        dropped.push(found);
        return true;
      },
    };
    delivery.contextFactory = (...args) => new SagaStepContext(run, ...args);
    try {
      await next(delivery);
      // The timeouts the step dropped, and on completion those still waited for, are cancelled once the write has
      // won: in the step's transaction with the database, so a timeout already due has entered the outbox and
      // arrives anyway, to meet its step (or, completed, the step's onCompleted policy).
      const cancelling = run.completing ? [...dropped, ...run.timeouts] : dropped;
      if (run.completing) run.timeouts = [];
      const outcome: SagaOutcome = run.completing ? 'completed' : found ? 'continued' : 'started';
      const written = await store.write(manager, {
        ...message,
        saga: step.saga,
        correlationKey: key,
        expectedVersion: run.version,
        id: found?.id,
        state: serialiseState(run.state, step.maxStateBytes, step.step),
        timeouts: run.timeouts,
        status: run.completing ? 'completed' : 'active',
        outcome,
      });
      if (!written) throw new SagaConflictError(step.saga, key, run.version);
      for (const { messageId } of cancelling) await deps.sagas().scheduled.cancel({ messageId }, { manager });
    } catch (error) {
      // Without a transaction to roll back, the timeouts the failed run asked for are cancelled here.
      if (!store.transactional) {
        for (const messageId of requested) await deps.sagas().scheduled.cancel({ messageId }, { manager });
      }
      throw error;
    }
  };
}
