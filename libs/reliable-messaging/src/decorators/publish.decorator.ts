import { SetMetadata } from '@nestjs/common';
import { PUBLISH_METADATA } from '../reliable-messaging.constants';
import type { PublishOptions } from '../publishing/publish-options';

/** Options of `@Publish()`: the per-call options of the publisher, fixed for every return value. */
export type PublishDecoratorOptions = Omit<PublishOptions, 'manager'>;

/**
 * Publishes what the method returns (a message instance, an array of them, or nothing) through
 * `MessagePublisher.publishAll()`, after the method resolves. With an outbox configured the messages are written
 * in the method's transaction, with one statement: with nestjs-cls, the method and its outbox rows run in the
 * caller's transaction or in one opened for them (a `@Transactional()` on the method joins it); without it, the
 * method must run inside a transaction already, such as a `@Consume()` handler's with dedup on. A fixed
 * `idempotencyKey` suits a method returning one message: with an array, `publishAll()` refuses it.
 */
export const Publish = (options: PublishDecoratorOptions = {}): MethodDecorator =>
  SetMetadata(PUBLISH_METADATA, options);
