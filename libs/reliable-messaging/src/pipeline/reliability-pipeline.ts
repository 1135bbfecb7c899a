import { Inject, Injectable } from '@nestjs/common';
import { ExternalContextCreator, ModuleRef } from '@nestjs/core';
import { RESOLVED_MESSAGING_OPTIONS, SAGA_TIMEOUT_SERVICES } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import { MessageContextStorage } from '../context/message-context.storage';
import { ClaimCheckReader } from '../claim-check/claim-check-reader.service';
import { claimCheckStage } from '../claim-check/claim-check.middleware';
import { DatabaseAvailability } from '../database/database-availability.service';
import { TransactionContext } from '../database/transaction-context.service';
import { OverdueHandlers } from '../flow-control/overdue-handlers.service';
import { databasePauseStage } from '../flow-control/database-pause.middleware';
import { deadlineStage } from '../flow-control/deadline.middleware';
import { rateLimitStage } from '../flow-control/rate-limit.middleware';
import { InboxStats } from '../inbox/inbox-stats.service';
import { InboxStore } from '../inbox/inbox-store.service';
import { inboxStage } from '../inbox/inbox.middleware';
import { MemoryInbox } from '../inbox/memory-inbox';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { metricsStage } from '../metrics/metrics.middleware';
import { ShutdownSignal } from '../shutdown/shutdown-signal';
import { orderedRetryStage } from '../ordering/ordered-retry.middleware';
import { FailureHandler } from '../retry/failure-handler.service';
import { RetryScheduler } from '../retry/retry-scheduler.service';
import { redeliveryGuardStage } from '../retry/redelivery-guard.middleware';
import { traceStage } from '../tracing/trace.middleware';
import { ReplyPublisher } from '../request-reply/reply-publisher.service';
import { replyStage } from '../request-reply/reply.middleware';
import { sagaConflictStage } from '../saga/saga-conflict.middleware';
import { sagaStage } from '../saga/saga.middleware';
import { decodeStage } from './decode.middleware';
import { invokeHandler } from './invoke-handler';
import { createNestHandler } from './nest-handler';
import { compose, type MessageHandler, type MessageMiddleware } from './message-middleware';
import type { PipelineStage, StageDependencies } from './pipeline-stage';
import type { SagaTimeoutServices } from '../saga/saga-timeout-services';
import { databaseSagaStore } from '../saga/saga-store';
import { MemorySagaStore } from '../saga/memory-saga-store';
import { settleStage } from './settle.middleware';

/**
 * The reliability chain every delivery passes through, outermost first. A stage with nothing to do for a
 * consumer (its plan says so) is left out of that consumer's chain; users cannot opt out of one otherwise, and
 * application concerns belong in Nest interceptors on the handler. Where each stage reads its settings: the
 * consumer's plan (consuming/consumer-plan.ts).
 */
export const RELIABILITY_STAGES: readonly PipelineStage[] = [
  // Ack after success; on failure retry or dead-letter (never both, never neither), once an attempt abandoned at
  // its deadline has returned.
  settleStage,
  // Reply consumers: after everything inside (the handler, the inbox's commit) and before the ack, the handler's
  // return value goes to the request's `replyTo`; a failure that will be dead-lettered is answered with its error.
  replyStage,
  // Unordered consumers: a delivery the broker redelivered (its last one ended with no outcome, e.g. the process
  // died) goes back to the tail counted in `rm-redeliveries`, and dead-letters past `retry.maxRedeliveries`.
  redeliveryGuardStage,
  // A CONSUMER `process <queue>` span, child of the trace context the message carries; the rest runs in it.
  traceStage,
  // Handler duration, consumed or failed, consumer lag.
  metricsStage,
  // A claim check's body read back from its store (checked against its reference, size and SHA-256) before it is
  // decoded; while the store is unreachable the delivery waits, spending no attempt.
  claimCheckStage,
  // Envelope, size limit, safe JSON, message type and schema version, validation; refusals are never retried.
  decodeStage,
  // Ordered consumers: a failed attempt is retried in place after its backoff, holding the queue or partition,
  // and a redelivery past `retry.maxRedeliveries` (the broker's x-delivery-count) is dead-lettered.
  orderedRetryStage,
  // With a `dataSource`: while the database is down a delivery waits, holding its slot, and a run the outage
  // broke runs again as the same attempt; no attempt or redelivery is spent.
  databasePauseStage,
  // With `rateLimit`: waits until the handler may start.
  rateLimitStage,
  // Saga steps: a step that lost the race for its instance to another step runs again at once, in a fresh
  // transaction, as the same attempt (bounded by the saga's maxConflictReruns).
  sagaConflictStage,
  // Every consumer: past `deadlineMs` the handler's signal aborts and the attempt fails
  // (HandlerDeadlineExceededError); the retry waits until the handler has returned.
  deadlineStage,
  // With `dedup`: a transaction with the message's inbox row around the handler; a duplicate is skipped. After
  // the rate limit, so no transaction is held while waiting; inside the deadline, which ends the transaction too.
  inboxStage,
  // Saga steps: in the inbox's transaction, the instance the message correlates to is loaded (or the step's
  // missing/completed policy applied), the step runs on it, and its state is written if no other step changed it.
  sagaStage,
];

/**
 * Builds each consumer's reliability chain once, at startup: the stages above, then the handler through Nest's
 * guards, interceptors, pipes and filters (`createNestHandler`; the context type is `rmq`, or `rpc` for an `@EventPattern()`).
 */
@Injectable()
export class ReliabilityPipeline {
  private readonly deps: StageDependencies;

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) options: ResolvedMessagingOptions,
    failures: FailureHandler,
    retries: RetryScheduler,
    replies: ReplyPublisher,
    metrics: MessagingMetrics,
    overdue: OverdueHandlers,
    shutdown: ShutdownSignal,
    database: DatabaseAvailability,
    store: InboxStore,
    stats: InboxStats,
    transactions: TransactionContext,
    memoryInbox: MemoryInbox,
    memorySagas: MemorySagaStore,
    claimChecks: ClaimCheckReader,
    moduleRef: ModuleRef,
    private readonly contextStorage: MessageContextStorage,
    private readonly externalContextCreator: ExternalContextCreator,
  ) {
    let sagaServices: SagaTimeoutServices | undefined;
    this.deps = {
      failures,
      retries,
      replies,
      metrics,
      overdue,
      claimChecks,
      shutdown: shutdown.signal,
      database: options.dataSource ? database : undefined,
      inbox: {
        store,
        stats,
        transactions,
        memory: options.inbox.store === 'memory' ? memoryInbox : undefined,
      },
      // NOTE: the publisher's own dependencies reach the consumer registry, which builds this pipeline: injected here
      // they would close a cycle Nest refuses, so saga steps look them up when they first schedule a timeout.
      sagas: () =>
        (sagaServices ??= moduleRef.get<SagaTimeoutServices>(SAGA_TIMEOUT_SERVICES, { strict: false })),
      // Saga instances live where the inbox does: the step's transaction is the inbox's.
      sagaStore: options.inbox.store === 'memory' ? memorySagas : databaseSagaStore,
    };
  }

  build(plan: ConsumerPlan): MessageHandler {
    const stages: MessageMiddleware[] = [];
    for (const stage of RELIABILITY_STAGES) {
      const middleware = stage(plan, this.deps);
      if (middleware) stages.push(middleware);
    }
    const handler = createNestHandler(plan, this.externalContextCreator, this.contextStorage);
    return compose(stages, invokeHandler(handler, this.contextStorage, plan.reply));
  }
}
