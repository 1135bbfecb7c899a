import { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { backendPid, terminateBackend } from '../database/backend-terminator';
import { errorMessage } from '../util/error-text';
import { untilAborted } from '../util/until-aborted';

/** How long an abandoned handler's transaction may take to roll back before its backend is terminated. */
const ROLLBACK_GRACE_MS = 1_000;

const logger = new Logger('ReliableMessaging');

/**
 * The inbox stage of the reliability pipeline, for a consumer with `dedup` on. The handler runs inside a
 * transaction that first inserts the inbox row (the plan's dedup scope, and the idempotency key): a duplicate finds the row, skips the handler and is acknowledged; otherwise the handler's
 * writes (through `ctx.manager`, `txHost.tx` or `@Transactional()`) and the messages it publishes (outbox rows)
 * commit with the row, and the acknowledgement follows the commit. Any error (the handler's, a constraint
 * failing at commit, the database going away) rolls the transaction back and goes on up the pipeline, where the
 * database pause stage tells an outage from the message's fault.
 *
 * When the attempt is abandoned (its deadline passed, or shutdown passed its own), the transaction is rolled
 * back at once, without waiting for the handler; a statement still running holds the connection, so if the
 * rollback has not finished within a second the backend is terminated. The handler's later queries then fail,
 * and the database pool is never exhausted by handlers that ignore their signal.
 */
export function inboxStage(
  consumer: Pick<ConsumerPlan, 'name' | 'queue' | 'dedup'>,
  { inbox }: Pick<StageDependencies, 'inbox'>,
): MessageMiddleware | undefined {
  if (!consumer.dedup) return undefined;
  const { store, stats, transactions } = inbox;
  const { scope } = consumer.dedup;
  return (next) => async (delivery) => {
    const envelope = delivery.envelope;
    if (!envelope) throw new Error('the inbox stage runs after the envelope is decoded');
    let duplicate = false;
    let ended = false;
    try {
      await transactions.runInNewTransaction(async (manager) => {
        if (!(await store.record(manager, scope, envelope))) {
          duplicate = true;
          return;
        }
        delivery.manager = manager;
        // The deadline may have passed while the row was written: then the handler must not start at all.
        const abandoned = delivery.abort.signal;
        abandoned.throwIfAborted();
        await untilAborted(next(delivery), abandoned, () =>
          endIfStuck(delivery.consumer.name, manager, () => ended),
        );
      });
    } finally {
      ended = true;
      delivery.manager = undefined;
    }
    if (duplicate) {
      logger.debug(
        `${consumer.name}: message ${envelope.messageId} is a duplicate of one already handled (idempotency key ${envelope.idempotencyKey}); skipped`,
      );
      stats.record({
        queue: consumer.queue,
        consumer: consumer.name,
        messageId: envelope.messageId,
        idempotencyKey: envelope.idempotencyKey,
        type: envelope.type,
      });
    }
  };
}

/**
 * Terminates the transaction's backend unless the transaction has ended within the grace period: a statement
 * still running on the connection would hold the rollback behind it for as long as it runs.
 */
function endIfStuck(consumer: string, manager: EntityManager, ended: () => boolean): void {
  const pid = backendPid(manager);
  if (pid === undefined) return;
  const abandonedAt = new Date();
  const timer = setTimeout(() => {
    if (ended()) return;
    logger.warn(
      `${consumer}: the transaction of an abandoned handler did not roll back within ${ROLLBACK_GRACE_MS} ms; terminating its database backend`,
    );
    terminateBackend(manager, pid, abandonedAt).catch((error: unknown) =>
      logger.error(`${consumer}: could not terminate backend ${pid}: ${errorMessage(error)}`),
    );
  }, ROLLBACK_GRACE_MS);
  timer.unref();
}
