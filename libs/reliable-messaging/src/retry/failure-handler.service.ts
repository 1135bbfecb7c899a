import { Injectable, Logger } from '@nestjs/common';
import { DeadLetterService } from '../dead-letter/dead-letter.service';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { defaultErrorClassifier } from './error-classifier';

/** How long to hold a message whose dead-lettering failed before handing it back, so a broken broker path never spins. */
const REQUEUE_PAUSE_MS = 1000;

/**
 * Decides what happens to a delivery whose handling failed. Non-retryable failures are dead-lettered at once;
 * other failures are dead-lettered as `handler-failed`. If the dead letter cannot be stored the delivery goes
 * back to the broker, so nothing is lost.
 */
@Injectable()
export class FailureHandler {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(private readonly deadLetters: DeadLetterService) {}

  async handle(delivery: InboundDelivery, error: unknown): Promise<void> {
    const verdict = defaultErrorClassifier(error);
    const reason = verdict === 'dead-letter' ? undefined : 'handler-failed';
    this.logger.warn(
      `${delivery.consumer.name} failed on message ${delivery.envelope?.messageId ?? delivery.raw.properties.messageId ?? '?'}: ${errorMessage(error)}; dead-lettering`,
    );
    await this.deadLetterOrRequeue(delivery, error, reason);
  }

  /** Dead-letters and acknowledges; when the dead letter cannot be stored, requeues after a pause. */
  async deadLetterOrRequeue(delivery: InboundDelivery, error: unknown, reason?: string): Promise<void> {
    try {
      await this.deadLetters.deadLetter(delivery, error, reason);
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
