import { Inject, Injectable } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import { isOrdered, type ConsumerDefinition } from '../consuming/consumer-definition';
import { maxDeadlineMs } from '../flow-control/deadline-limits';
import { OverdueHandlers } from '../flow-control/overdue-handlers.service';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import { FailureHandler } from '../retry/failure-handler.service';
import { orderedRetryMiddleware } from './ordered-retry.middleware';

/**
 * Builds the in-place retry stage of each ordered consumer and stops its waits when shutdown begins
 * (MessagingLifecycle calls `stopWaiting`), so a retry backoff never holds up a graceful shutdown: the delivery
 * goes back to the head of its queue instead.
 */
@Injectable()
export class OrderedRetry {
  private readonly stopping = new AbortController();

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly failures: FailureHandler,
    private readonly overdue: OverdueHandlers,
    private readonly metrics: MessagingMetrics,
  ) {}

  /** The stage for `consumer`: in-place retries when it is ordered, none otherwise. */
  stagesFor(consumer: ConsumerDefinition): MessageMiddleware[] {
    if (!isOrdered(consumer)) return [];
    return [
      orderedRetryMiddleware({
        policy: this.failures.policyFor(consumer),
        holdLimitMs: maxDeadlineMs(this.options.consumerTimeoutMs),
        overdueCount: () => this.overdue.count(consumer.queue),
        stopping: this.stopping.signal,
        deadLetter: (delivery, error, reason) => this.failures.deadLetterOrRequeue(delivery, error, reason),
        recordRetry: (delivery) => {
          this.metrics.failed.inc(this.metrics.labelsOf(delivery));
          this.metrics.recordRetry(delivery);
        },
      }),
    ];
  }

  /** Ends every wait between in-place attempts, now and from now on. */
  stopWaiting(): void {
    this.stopping.abort();
  }
}
