import { Inject, Injectable } from '@nestjs/common';
import { HEADERS } from '../reliable-messaging.constants';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { withoutBrokerHeaders } from '../envelope/broker-headers';
import { republish } from '../envelope/republish';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { DELAY_RESOLUTION_MS, delayEntryExchange, delayRoutingKey } from './delay-levels';

/**
 * Puts a failed delivery back on its way, published with a confirm before the original is acknowledged, so a
 * crash in between duplicates the message rather than losing it. Its attempt count, first failure time and
 * original exchange and routing key travel in its own headers, so nothing depends on the broker's
 * redelivery counters.
 */
@Injectable()
export class RetryScheduler {
  constructor(
    private readonly publisher: ConfirmPublisher,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /** Where a message waiting `delayMs` is published, and with which routing key. */
  private delayed(delayMs: number): { exchange: string; routingKey: string } {
    return {
      exchange: delayEntryExchange(this.options.exchange, delayMs),
      routingKey: delayRoutingKey(delayMs),
    };
  }

  /** Sends the delivery through the delay levels; it reaches its queue again as attempt `nextAttempt` after `delayMs`. */
  async scheduleRetry(delivery: InboundDelivery, nextAttempt: number, delayMs: number): Promise<void> {
    const headers = carriedHeaders(delivery);
    headers[HEADERS.attempt] = nextAttempt;
    headers[HEADERS.firstFailureAt] ??= new Date().toISOString();
    headers[HEADERS.retryQueue] = delivery.consumer.queue;
    await this.publisher.publish(
      republish(delivery.raw, this.delayed(delayMs), headers, {
        fallbackMessageId: delivery.envelope?.messageId,
      }),
    );
  }

  /**
   * Returns the delivery to its queue on purpose (the module held it through an outage, or is shutting down)
   * as a fresh copy with its counters unchanged, so the return costs no attempt and no redelivery: the broker
   * flags a requeued delivery as redelivered, and on quorum queues counts it, and neither can tell the module's
   * returns from crashes. The copy waits one delay step, as other returns do.
   */
  async returnToQueue(delivery: InboundDelivery): Promise<void> {
    const headers = carriedHeaders(delivery);
    headers[HEADERS.retryQueue] = delivery.consumer.queue;
    await this.publisher.publish(
      republish(delivery.raw, this.delayed(DELAY_RESOLUTION_MS), headers, {
        fallbackMessageId: delivery.envelope?.messageId,
      }),
    );
  }

  /**
   * Sends the delivery back to its queue through the delay levels after `delayMs`, as the same attempt,
   * counting one more delivery without an outcome.
   */
  async checkpointRedelivery(
    delivery: InboundDelivery,
    redeliveries: number,
    delayMs: number,
  ): Promise<void> {
    const headers = carriedHeaders(delivery);
    headers[HEADERS.redeliveries] = redeliveries;
    headers[HEADERS.retryQueue] = delivery.consumer.queue;
    await this.publisher.publish(
      republish(delivery.raw, this.delayed(delayMs), headers, {
        fallbackMessageId: delivery.envelope?.messageId,
      }),
    );
  }
}

/** The delivery's headers without the broker's, with the exchange and routing key it was first published with. */
function carriedHeaders(delivery: InboundDelivery): Record<string, unknown> {
  const headers = withoutBrokerHeaders(delivery.raw.properties.headers);
  delete headers[HEADERS.retryQueue];
  headers[HEADERS.originalExchange] ??= delivery.raw.fields.exchange;
  headers[HEADERS.originalRoutingKey] ??= delivery.raw.fields.routingKey;
  return headers;
}
