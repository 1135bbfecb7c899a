import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { errorMessage } from '../util/error-text';
import { buildReply, type ReplyOutcome } from './reply-message';

/**
 * Sends a responder's replies straight to the broker on the publisher connection, with a confirm, never
 * through the outbox: the caller waits for it now, and its reply channel lives no longer than its wait. A reply
 * that cannot be sent is logged and dropped: the handler's work is done and its message is acknowledged
 * anyway, and the caller gets its timeout (or RequestInterruptedError) instead.
 */
@Injectable()
export class ReplyPublisher {
  private readonly logger = new Logger('ReliableMessaging');

  constructor(
    private readonly confirms: ConfirmPublisher,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /** Replies to the request `delivery` carries, at `replyTo`; never throws. */
  async reply(delivery: InboundDelivery, replyTo: string, outcome: ReplyOutcome): Promise<void> {
    const properties = delivery.raw.properties;
    const messageId = (properties.messageId as string | undefined) ?? delivery.envelope?.messageId;
    if (messageId === undefined) {
      this.logger.warn(`${delivery.consumer.name}: a request without a message id cannot be answered`);
      return;
    }
    const reply = buildReply(
      { replyTo, messageId, type: properties.type as string | undefined },
      outcome,
      this.options.appId,
    );
    try {
      await this.confirms.publish(reply, { persistent: false, mandatory: false });
    } catch (error) {
      this.logger.warn(
        `${delivery.consumer.name}: the reply to request ${messageId} was not sent (${errorMessage(error)}); its caller will time out`,
      );
    }
  }
}
