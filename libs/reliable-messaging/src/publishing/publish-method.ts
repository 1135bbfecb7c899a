import type { PublishDecoratorOptions } from '../decorators/publish.decorator';
import type { TransactionContext } from '../database/transaction-context.service';
import type { MessagePublisher } from './message-publisher.service';

/**
 * Replaces a `@Publish()` method on its instance with one that publishes what the original returns (a message,
 * an array of them, or nothing) once it resolves. With nestjs-cls, the method and the outbox rows of what it
 * returns share one transaction: the caller's, or one opened here, which a @Transactional() on the method joins
 * instead of committing before the publish.
 */
export function wrapPublishMethod(
  instance: Record<string, unknown>,
  methodName: string,
  options: PublishDecoratorOptions,
  publisher: MessagePublisher,
  transactions: TransactionContext,
): void {
  const original = instance[methodName] as (...args: unknown[]) => unknown;
  const wrapped = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    return transactions.runInCurrentOrNewTransaction(async () => {
      const result = await original.apply(this, args);
      const messages = Array.isArray(result)
        ? result
        : result === undefined || result === null
          ? []
          : [result];
      await publisher.publishAll(messages as object[], options);
      return result;
    });
  };
  // NOTE: Nest reads metadata from the method object, so the wrapper carries the original's metadata.
  for (const key of Reflect.getMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getMetadata(key, original), wrapped);
  }
  instance[methodName] = wrapped;
}
