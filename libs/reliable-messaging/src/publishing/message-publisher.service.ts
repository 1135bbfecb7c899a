import { Injectable } from '@nestjs/common';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { EnvelopeFactory } from '../envelope/envelope.factory';
import type { PublishOptions } from './publish-options';

/** The result of a publish: the id the message got. */
export interface PublishReceipt {
  messageId: string;
}

/**
 * Publishes messages with the full envelope. `publish()` is the default path; `publishNow()` sends at once
 * with a broker confirm, outside any transaction.
 */
@Injectable()
export class MessagePublisher {
  constructor(
    private readonly envelopes: EnvelopeFactory,
    private readonly confirms: ConfirmPublisher,
  ) {}

  /** Publishes a `@MessageType()` instance (or `{ type, payload }`) and waits for the broker's confirm. */
  async publish(message: object, options: PublishOptions = {}): Promise<PublishReceipt> {
    return this.publishNow(message, options);
  }

  /** Sends at once and waits for the broker's confirm; not tied to any database transaction. */
  async publishNow(message: object, options: PublishOptions = {}): Promise<PublishReceipt> {
    const outbound = this.envelopes.create(message, options);
    await this.confirms.publish(outbound);
    return { messageId: outbound.properties.messageId };
  }
}
