import { Inject, Injectable } from '@nestjs/common';
import { ExternalContextCreator } from '@nestjs/core';
import { RMQ_CONTEXT_TYPE } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import { MessageContextStorage } from '../context/message-context.storage';
import { FailureHandler } from '../retry/failure-handler.service';
import { RetryScheduler } from '../retry/retry-scheduler.service';
import { redeliveryGuardMiddleware } from '../retry/redelivery-guard.middleware';
import { traceMiddleware } from '../tracing/trace.middleware';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { metricsMiddleware } from '../metrics/metrics.middleware';
import { flowControlStages } from '../flow-control/flow-control-stages';
import { OverdueHandlers } from '../flow-control/overdue-handlers.service';
import { InboxStage } from '../inbox/inbox.middleware';
import { isOrdered, OrderedRetry } from '../ordering/ordered-retry.service';
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
 * 6. rate limit (when the consumer has `rateLimit`): waits until the handler may start
 * 7. deadline: past `deadlineMs` the handler's signal aborts and the attempt fails (HandlerDeadlineExceededError)
 * 8. inbox (when the consumer has `dedup`): a transaction with the message's inbox row around the handler; a
 *    duplicate is skipped, the handler's writes and outbox rows commit with the row before the ack; a
 *    transaction the database broke sends the delivery back unacknowledged. After the rate limit, so no
 *    transaction is held while waiting; inside the deadline, so a handler the deadline gave up on can still
 *    commit, and the retry of it is then skipped as a duplicate
 * 9. the handler, through Nest's guards, interceptors and pipes
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
      ...flowControlStages(consumer, this.options, this.overdue),
      this.inbox.for(consumer),
    ];
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
