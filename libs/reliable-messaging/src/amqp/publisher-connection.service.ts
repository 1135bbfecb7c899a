import { Inject, Injectable } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { AmqpConnection } from './amqp-connection.service';

/**
 * The connection that publishes: it carries only ConfirmPublisher's confirm channel (retries, dead letters,
 * the outbox relay, MessagePublisher). During a memory or disk alarm the broker blocks it, and publishing waits
 * until the alarm clears, while the consumer connection goes on. Shown as `<connectionName>:publish`.
 */
@Injectable()
export class PublisherConnection extends AmqpConnection {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) options: ResolvedMessagingOptions) {
    super(options, 'publish');
  }
}
