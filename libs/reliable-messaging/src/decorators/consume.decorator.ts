import { SetMetadata } from '@nestjs/common';
import { CONSUME_METADATA } from '../reliable-messaging.constants';
import type { ConsumeOptions } from '../options/consume.options';

/**
 * Subscribes a provider method to a queue. The method receives the validated payload (an instance of its
 * message class) and a `MessageContext`; the message is acknowledged only after the returned promise resolves.
 *
 * @example
 * ＠Consume({ queue: 'payment.order-placed' })
 * async onOrderPlaced(event: OrderPlaced, ctx: MessageContext) { ... }
 */
export const Consume = (options: ConsumeOptions): MethodDecorator => SetMetadata(CONSUME_METADATA, options);
