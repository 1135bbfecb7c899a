import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import { DeadLetterService } from '../dead-letter/dead-letter.service';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { mergeRetryOptions } from './retry.options';
import { RetryPolicy } from './retry-policy';
import { RetryScheduler } from './retry-scheduler.service';

/** How long to hold a message whose dead-lettering failed before handing it back, so a broken broker path never spins. */
const REQUEUE_PAUSE_MS = 1000;

/**
 * The single decision point for a delivery whose handling failed: classify the error with the consumer's
 * retry policy, then either schedule the next attempt through the delay levels (published with a confirm, then
 * the original acknowledged) or dead-letter it with its reason. When neither can be stored the delivery goes
 * back to the broker after a pause, so nothing is lost and nothing spins.
 */
@Injectable()
export class FailureHandler {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly policies = new WeakMap<ConsumerDefinition, RetryPolicy>();

  constructor(
    private readonly deadLetters: DeadLetterService,
    private readonly retries: RetryScheduler,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    @Optional() private readonly metrics?: MessagingMetrics,
  ) {}

  /**
   * The consumer's retry policy: the module's `retry` with the consumer's own `retry` over it. Resolved once;
   * the pipeline asks for it at startup so a wrong option fails the app's start.
   */
  policyFor(consumer: ConsumerDefinition): RetryPolicy {
    let policy = this.policies.get(consumer);
    if (!policy) {
      policy = new RetryPolicy(
        mergeRetryOptions(this.options.retry, consumer.options.retry, `${consumer.name} retry`),
      );
      this.policies.set(consumer, policy);
    }
    return policy;
  }

  async handle(delivery: InboundDelivery, error: unknown): Promise<void> {
    // A delivery released at the shutdown deadline goes back to the broker; retrying it too would duplicate it.
    if (delivery.isSettled) return;
    const decision = this.policyFor(delivery.consumer).decide(error, delivery.attempt);
    const what = `${delivery.consumer.name} failed on message ${delivery.envelope?.messageId ?? delivery.raw.properties.messageId ?? '?'} (attempt ${delivery.attempt}): ${errorMessage(error)}`;
    if (decision.action === 'dead-letter') {
      this.logger.warn(`${what}; dead-lettering (${decision.reason})`);
      await this.deadLetterOrRequeue(delivery, error, decision.reason);
      return;
    }
    try {
      await this.retries.scheduleRetry(delivery, decision.nextAttempt, decision.delayMs);
      this.metrics?.recordRetry(delivery);
    } catch (publishError) {
      this.logger.error(
        `${what}; could not schedule attempt ${decision.nextAttempt} (${errorMessage(publishError)}); returning it to the queue`,
      );
      await sleep(REQUEUE_PAUSE_MS);
      delivery.nack(true);
      return;
    }
    delivery.ack();
    this.logger.warn(`${what}; attempt ${decision.nextAttempt} in ${decision.delayMs} ms`);
  }

  /** Dead-letters and acknowledges; when the dead letter cannot be stored, requeues after a pause. */
  async deadLetterOrRequeue(delivery: InboundDelivery, error: unknown, reason?: string): Promise<void> {
    try {
      await this.deadLetters.deadLetter(delivery, error, reason);
      this.metrics?.recordDeadLetter(
        delivery,
        reason ?? (error instanceof InvalidMessageError ? error.reason : 'non-retryable'),
      );
      delivery.ack();
    } catch (publishError) {
      this.logger.error(
        `could not dead-letter a message of ${delivery.consumer.queue} (${errorMessage(publishError)}); returning it to the queue`,
      );
      await sleep(REQUEUE_PAUSE_MS);
      delivery.nack(true);
    }
  }
}
