import { Inject, Injectable } from '@nestjs/common';
import { HEADERS, RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboundMessage } from '../envelope/envelope';
import { ConfigurationError } from '../errors/configuration.error';
import { MessagingMetrics } from '../metrics/messaging-metrics.service';
import { delayTarget, republishQueueName } from './broker-delay';
import { assertBodiesOutlive, dueTime, type ScheduledDelivery } from './scheduled-delivery';

/**
 * Turns messages published with `deliverAt` or `delayMs` without an outbox into what goes into the broker's delay
 * levels (`scheduling.brokerDelays`, docs/scheduling.md): addressed to the level of the delay's highest bit, with
 * the due time, the destination and the republish queue in headers. The publisher sends them with confirms.
 */
@Injectable()
export class BrokerDelayWriter {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly metrics: MessagingMetrics,
  ) {}

  /** True when scheduled messages without an outbox go through the delay levels (`scheduling.brokerDelays`). */
  get enabled(): boolean {
    return this.options.scheduling.brokerDelays;
  }

  /**
   * The messages as they enter the delay levels, each due at `delivery`. Throws a ConfigurationError, before
   * anything is sent, for a delay above `scheduling.maxDelayMs`, a destination other than the module's exchange
   * and the message's type (the republisher sends nowhere else), and a claim-checked body that expires first.
   */
  delayed(messages: readonly OutboundMessage[], delivery: ScheduledDelivery): OutboundMessage[] {
    const now = Date.now();
    const dueAt = dueTime(delivery, now);
    const delayMs = dueAt - now;
    const { exchange, scheduling } = this.options;
    assertBodiesOutlive(messages, dueAt);
    return messages.map((message) => {
      const type = message.properties.type ?? message.routingKey;
      if (delayMs > scheduling.maxDelayMs) {
        throw new ConfigurationError(
          `publish() of '${type}': a delay of ${delayMs} ms is more than scheduling.maxDelayMs ` +
            `(${scheduling.maxDelayMs} ms), the longest a message may wait in the broker's delay levels`,
        );
      }
      if (message.exchange !== exchange || message.routingKey !== message.properties.type) {
        throw new ConfigurationError(
          `publish() of '${type}' with deliverAt or delayMs and no outbox goes to the module's exchange ` +
            `('${exchange}') with the message type as routing key: leave out the exchange and routingKey options`,
        );
      }
      return {
        ...message,
        ...delayTarget(exchange, delayMs),
        properties: {
          ...message.properties,
          headers: {
            ...message.properties.headers,
            [HEADERS.scheduledFor]: new Date(dueAt).toISOString(),
            [HEADERS.originalExchange]: message.exchange,
            [HEADERS.originalRoutingKey]: message.routingKey,
            [HEADERS.retryQueue]: republishQueueName(exchange),
          },
        },
      };
    });
  }

  /** Counts messages the broker confirmed into the delay levels (`rm_scheduled_delayed_total`). */
  recordSent(count: number): void {
    this.metrics.scheduledDelayed.inc(count);
  }
}
