import { Injectable, Logger, Optional } from '@nestjs/common';
import { DeadLetterService } from '../dead-letter/dead-letter.service';
import { InvalidMessageError } from '../errors/invalid-message.error';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { errorMessage } from '../util/error-text';
import { publishWhileHeld } from './publish-while-held';
import { RetryScheduler } from './retry-scheduler.service';

/**
 * The single decision point for a delivery whose handling failed: classify the error with the consumer's
 * retry policy, then either schedule the next attempt through the delay levels (published with a confirm, then
 * the original acknowledged) or dead-letter it with its reason. While the broker cannot take either, the
 * delivery is held and the publish tried again (publishWhileHeld), so a broker outage costs the message
 * nothing; nothing is lost and nothing spins.
 */
@Injectable()
export class FailureHandler {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(
    private readonly deadLetters: DeadLetterService,
    private readonly retries: RetryScheduler,
    @Optional() private readonly metrics?: MessagingMetrics,
  ) {}

  async handle(delivery: InboundDelivery, error: unknown): Promise<void> {
    // A delivery released at the shutdown deadline goes back to the broker; retrying it too would duplicate it.
    if (delivery.isSettled) return;
    const decision = delivery.consumer.retry.decide(error, delivery.attempt);
    const what = `${delivery.consumer.name} failed on message ${delivery.envelope?.messageId ?? delivery.raw.properties.messageId ?? '?'} (attempt ${delivery.attempt}): ${errorMessage(error)}`;
    if (decision.action === 'dead-letter') {
      this.logger.warn(`${what}; dead-lettering (${decision.reason})`);
      await this.deadLetterOrRequeue(delivery, error, decision.reason);
      return;
    }
    const scheduled = await publishWhileHeld(
      delivery,
      () => this.retries.scheduleRetry(delivery, decision.nextAttempt, decision.delayMs),
      `${what}; scheduling attempt ${decision.nextAttempt}`,
      this.logger,
    );
    if (!scheduled) return;
    this.metrics?.recordRetry(delivery);
    delivery.ack();
    this.logger.warn(`${what}; attempt ${decision.nextAttempt} in ${decision.delayMs} ms`);
  }

  /** Dead-letters and acknowledges, holding the delivery while the dead letter cannot be stored. */
  async deadLetterOrRequeue(delivery: InboundDelivery, error: unknown, reason?: string): Promise<void> {
    const stored = await publishWhileHeld(
      delivery,
      () => this.deadLetters.deadLetter(delivery, error, reason),
      `dead-lettering a message of ${delivery.consumer.queue}`,
      this.logger,
    );
    if (!stored) return;
    this.metrics?.recordDeadLetter(
      delivery,
      reason ?? (error instanceof InvalidMessageError ? error.reason : 'non-retryable'),
    );
    delivery.ack();
  }

  /**
   * Gives a delivery the module held (through a database outage, or when shutdown interrupts the wait) back to
   * its queue without costing it an attempt or a redelivery, as its consumer's intake does: as a fresh copy with
   * its counters unchanged (RetryScheduler.returnToQueue), acknowledged once the copy is confirmed; or, for an
   * ordered consumer, unacknowledged, since a copy at the tail would let later messages of its key pass it
   * (intake/ordered-intake.ts).
   */
  async returnToQueue(delivery: InboundDelivery, why: string): Promise<void> {
    if (delivery.isSettled) return;
    const id =
      delivery.envelope?.messageId ?? (delivery.raw.properties.messageId as string | undefined) ?? '?';
    const { intake } = delivery.consumer;
    this.logger.warn(`${delivery.consumer.name}: ${why}; message ${id} goes back to ${intake.heldReturnsTo}`);
    await intake.returnHeld(delivery, async () => {
      const returned = await publishWhileHeld(
        delivery,
        () => this.retries.returnToQueue(delivery),
        `returning message ${id} to ${delivery.consumer.queue}`,
        this.logger,
      );
      if (returned) delivery.ack();
    });
  }
}
