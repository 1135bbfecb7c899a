import { SetMetadata } from '@nestjs/common';
import { PUBLISH_METADATA } from '../reliable-messaging.constants';
import type { PublishOptions } from '../publishing/publish-options';

/** Options of `@Publish()`: the per-call options of the publisher, fixed for every return value. */
export type PublishDecoratorOptions = Omit<PublishOptions, 'manager'>;

/**
 * Publishes what the method returns (a message instance, an array of them, or nothing) through the
 * `MessagePublisher`, after the method resolves. With an outbox configured the messages join the current
 * transaction, so decorate a method that runs inside one (for example with `@Transactional()`).
 */
export const Publish = (options: PublishDecoratorOptions = {}): MethodDecorator =>
  SetMetadata(PUBLISH_METADATA, options);
