import { Inject, Injectable } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { AmqpConnection } from './amqp-connection.service';

/**
 * The connection that consumes: consumer channels and their acknowledgements, topology declarations and passive
 * checks (queue depths, dead letters, whether an exchange exists). Nothing publishes on it, so the broker never
 * blocks it during a memory or disk alarm and consumers keep draining their queues. Shown as
 * `<connectionName>:consume`.
 */
@Injectable()
export class ConsumerConnection extends AmqpConnection {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) options: ResolvedMessagingOptions) {
    super(options, 'consume');
  }
}
