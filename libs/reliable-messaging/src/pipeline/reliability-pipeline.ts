import { Inject, Injectable } from '@nestjs/common';
import { ExternalContextCreator } from '@nestjs/core';
import { RMQ_CONTEXT_TYPE } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { isOrdered, type ConsumerDefinition } from '../consuming/consumer-definition';
import { MessageContextStorage } from '../context/message-context.storage';
import { FailureHandler } from '../retry/failure-handler.service';
import { RetryScheduler } from '../retry/retry-scheduler.service';
import { redeliveryGuardMiddleware } from '../retry/redelivery-guard.middleware';
import { traceMiddleware } from '../tracing/trace.middleware';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { metricsMiddleware } from '../metrics/metrics.middleware';
import { flowControlStages } from '../flow-control/flow-control-stages';
import { databasePauseStage } from '../flow-control/database-pause.middleware';
import { DatabaseAvailability } from '../database/database-availability.service';
import { OverdueHandlers } from '../flow-control/overdue-handlers.service';
import { InboxStage } from '../inbox/inbox.middleware';
import { OrderedRetry } from '../ordering/ordered-retry.service';
import { compose, type MessageHandler, type MessageMiddleware } from './message-middleware';
import { settleMiddleware } from './settle.middleware';
import { decodeMiddleware } from './decode.middleware';
import { invokeHandler, type NestHandler } from './invoke-handler';

/**
 * Builds each consumer's fixed reliability chain once, at startup. The order, outermost first:
 *
 * 1. settle: ack after success; on failure, retry or dead-letter (never both, never neither)
 * 2. redelivery guard: a delivery the broker redelivered (its last one ended with no outcome, e.g. the process
 *    died) goes back to the tail counted in `rm-redeliveries`, and dead-letters past `retry.maxRedeliveries`.
 *    Not for ordered consumers: the tail would reorder it (their retry stage bounds redeliveries in place)
 * 3. trace: a CONSUMER `process <queue>` span, child of the trace context the message carries; the rest runs in it
 * 4. metrics: handler duration, consumed or failed, consumer lag
 * 5. decode: envelope, limits, safe JSON, schema version, validation
 *    ordered retry (ordered consumers only): a failed attempt is retried in place after its backoff, holding the
 *    queue or partition, so no later message of the key passes it; see ordering/ordered-retry.middleware.ts
 * 6. database pause (when the module has a `dataSource`): while the database is down a delivery waits, holding
 *    its slot, and a run the outage broke runs again as the same attempt; no attempt or redelivery is spent
 * 7. rate limit (when the consumer has `rateLimit`): waits until the handler may start
 * 8. deadline: past the consumer's `deadlineMs` (every consumer has one) the handler's signal aborts and the
 *    attempt fails (HandlerDeadlineExceededError); the retry waits until the handler has returned
 * 9. inbox (when the consumer has `dedup`): a transaction with the message's inbox row around the handler; a
 *    duplicate is skipped, the handler's writes and outbox rows commit with the row before the ack; an abandoned
 *    attempt's transaction is rolled back at once. After the rate limit, so no transaction is held while
 *    waiting; inside the deadline, so the deadline ends the transaction too
 * 10. the handler, through Nest's guards, interceptors and pipes
 *
 * Users cannot opt out of a stage; application concerns belong in Nest interceptors on the handler.
 */
@Injectable()
export class ReliabilityPipeline {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly failures: FailureHandler,
    private readonly retries: RetryScheduler,
    private readonly contextStorage: MessageContextStorage,
    private readonly externalContextCreator: ExternalContextCreator,
    private readonly metrics: MessagingMetrics,
    private readonly overdue: OverdueHandlers,
    private readonly inbox: InboxStage,
    private readonly ordered: OrderedRetry,
    private readonly database: DatabaseAvailability,
  ) {}

  build(consumer: ConsumerDefinition): MessageHandler {
    const stages: MessageMiddleware[] = [
      settleMiddleware(this.failures),
      ...(isOrdered(consumer)
        ? []
        : [redeliveryGuardMiddleware(this.failures.policyFor(consumer), this.retries)]),
      traceMiddleware(consumer),
      metricsMiddleware(this.metrics),
      decodeMiddleware(consumer, this.options.maxPayloadBytes),
      ...this.ordered.stagesFor(consumer),
      databasePauseStage(
        consumer,
        this.options.dataSource && {
          availability: this.database,
          returnToQueue: (delivery, why) => this.failures.returnToQueue(delivery, why),
        },
      ),
      ...flowControlStages(consumer, this.options, this.overdue),
      this.inbox.for(consumer),
    ].filter((stage) => stage !== undefined);
    return compose(stages, invokeHandler(this.nestHandler(consumer), this.contextStorage));
  }

  private nestHandler(consumer: ConsumerDefinition): NestHandler {
    const instance = consumer.instance as Record<string, (...args: unknown[]) => unknown>;
    return this.externalContextCreator.create(
      instance,
      instance[consumer.methodName],
      consumer.methodName,
      undefined,
      undefined,
      undefined,
      undefined,
      { guards: true, interceptors: true, filters: false },
      RMQ_CONTEXT_TYPE,
    );
  }
}
