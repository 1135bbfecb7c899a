import type { SagaTimeoutServices } from '../saga/saga-timeout-services';
import type { SagaStore } from '../saga/saga-store';
import type { ClaimCheckReader } from '../claim-check/claim-check-reader.service';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { DatabaseAvailability } from '../database/database-availability.service';
import type { TransactionContext } from '../database/transaction-context.service';
import type { OverdueHandlers } from '../flow-control/overdue-handlers.service';
import type { InboxStats } from '../inbox/inbox-stats.service';
import type { InboxStore } from '../inbox/inbox-store.service';
import type { MemoryInbox } from '../inbox/memory-inbox';
import type { MessagingMetrics } from '../metrics/messaging-metrics.service';
import type { FailureHandler } from '../retry/failure-handler.service';
import type { RetryScheduler } from '../retry/retry-scheduler.service';
import type { ReplyPublisher } from '../request-reply/reply-publisher.service';
import type { MessageMiddleware } from './message-middleware';

/** The module's services the stages use, gathered once by the ReliabilityPipeline. */
export interface StageDependencies {
  /** Retries or dead-letters a failed delivery, or gives a held one back to its queue. */
  failures: FailureHandler;
  /** Publishes redelivery checkpoints through the delay levels. */
  retries: RetryScheduler;
  /** Sends reply consumers' replies to their callers. */
  replies: ReplyPublisher;
  metrics: MessagingMetrics;
  /** Handlers still running past their deadline, per queue. */
  overdue: OverdueHandlers;
  /** Reads claim-checked bodies back from the module's claim-check store. */
  claimChecks: ClaimCheckReader;
  /** Aborts when the app starts shutting down: an ordered retry stops waiting and hands its delivery back. */
  shutdown: AbortSignal;
  /** The database's availability; undefined when the module has no `dataSource`. */
  database?: DatabaseAvailability;
  /**
   * The inbox's table and transactions, used by deduplicating consumers; `memory` instead of the table with
   * `inbox.store: 'memory'`.
   */
  inbox: { store: InboxStore; stats: InboxStats; transactions: TransactionContext; memory?: MemoryInbox };
  /**
   * What saga steps' timeouts need: the publisher that schedules them, and the cancel for a completed instance;
   * resolved at a step's first timeout, not when the pipeline is built.
   */
  sagas: () => SagaTimeoutServices;
  /** Where saga steps keep their instances: `rm_saga`, or memory with `inbox.store: 'memory'`. */
  sagaStore: SagaStore;
}

/**
 * How every reliability stage is built, once per consumer at startup: from the consumer's plan and the
 * module's services, a middleware, or undefined when the stage has nothing to do for this consumer. A stage
 * declares what it reads by the `Pick<>` of its parameters.
 */
export type PipelineStage = (plan: ConsumerPlan, deps: StageDependencies) => MessageMiddleware | undefined;
