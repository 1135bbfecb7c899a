import { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { Envelope } from '../envelope/envelope';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { backendPid, endSession, terminateBackend } from '../database/backend-terminator';
import { errorMessage } from '../util/error-text';
import { untilAborted } from '../util/until-aborted';

const logger = new Logger('ReliableMessaging');

/**
 * The inbox stage of the reliability pipeline, for a consumer with `dedup` on. The handler runs inside a
 * transaction that first inserts the inbox row (the plan's dedup scope, and the idempotency key): a duplicate finds the row, skips the handler and is acknowledged; otherwise the handler's
 * writes (through `ctx.manager`, `txHost.tx` or `@Transactional()`) and the messages it publishes (outbox rows)
 * commit with the row, and the acknowledgement follows the commit. Any error (the handler's, a constraint
 * failing at commit, the database going away) rolls the transaction back and goes on up the pipeline, where the
 * database pause stage tells an outage from the message's fault.
 *
 * When the attempt is abandoned (its deadline passed, or shutdown passed its own), the transaction's session
 * ends at once, without waiting for the handler: PostgreSQL rolls back a transaction whose session ended, and
 * every statement the handler sends later fails. A plain ROLLBACK would not do: a statement the handler queued
 * behind it would run on the same connection outside any transaction and commit on its own. Its backend is
 * terminated too, and the stage returns once it is gone, so the retry never waits on the abandoned attempt's
 * locks. The database pool is never exhausted by handlers that ignore their signal.
 *
 * With `inbox.store: 'memory'` (tests without a database) the keys are kept in memory instead (MemoryInbox),
 * and there is no transaction.
 */
export function inboxStage(
  consumer: Pick<ConsumerPlan, 'name' | 'queue' | 'dedup'>,
  { inbox }: Pick<StageDependencies, 'inbox'>,
): MessageMiddleware | undefined {
  if (!consumer.dedup) return undefined;
  const { store, stats, transactions, memory } = inbox;
  const { scope } = consumer.dedup;
  const skipped = (envelope: Envelope): void => {
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
  };
  if (memory) {
    return (next) => async (delivery) => {
      const envelope = decoded(delivery.envelope);
      if (!(await memory.run(scope, envelope.idempotencyKey, () => next(delivery)))) skipped(envelope);
    };
  }
  return (next) => async (delivery) => {
    const envelope = decoded(delivery.envelope);
    let duplicate = false;
    let abandoning: Promise<void> | undefined;
    try {
      await transactions.runInNewTransactionStartingWith(
        store.recordStatement(scope, envelope),
        async (manager, affected) => {
          if (!store.isFresh(affected)) {
            duplicate = true;
            return;
          }
          delivery.manager = manager;
          // The deadline may have passed while the row was written: then the handler must not start at all.
          const attempt = delivery.abort;
          if (attempt.aborted) throw attempt.reason;
          await untilAborted(next(delivery), attempt, () => {
            abandoning = abandon(delivery.consumer.name, manager);
          });
        },
      );
    } finally {
      delivery.manager = undefined;
      // The retry must not meet the abandoned transaction's locks (its inbox row, its writes) on the server.
      await abandoning;
    }
    if (duplicate) skipped(envelope);
  };
}

function decoded(envelope: Envelope | undefined): Envelope {
  if (!envelope) throw new Error('the inbox stage runs after the envelope is decoded');
  return envelope;
}

/**
 * Ends the abandoned transaction's session, and its backend on the server, which would otherwise finish the
 * statement it runs (holding its locks) before it noticed; resolves once the backend is gone. Never rejects.
 */
async function abandon(consumer: string, manager: EntityManager): Promise<void> {
  const pid = backendPid(manager);
  const abandonedAt = new Date();
  endSession(manager);
  if (pid === undefined) return;
  await terminateBackend(manager, pid, abandonedAt).catch((error: unknown) =>
    logger.error(
      `${consumer}: could not end the database backend ${pid} of an abandoned handler: ${errorMessage(error)}`,
    ),
  );
}
