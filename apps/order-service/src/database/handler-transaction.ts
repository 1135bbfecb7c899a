import type { MessageContext } from 'nestjs-reliable-messaging';
import type { EntityManager } from 'typeorm';

/**
 * The transaction the messaging module opened for the message being handled (with dedup on, its inbox row is
 * in it): the handler's writes, and the events it publishes, commit with that row or not at all.
 */
export function handlerTransaction(ctx: MessageContext): EntityManager {
  if (!ctx.manager) {
    throw new Error(
      `${ctx.consumer} has no transaction: it writes to the database, so it needs dedup on (the default with a dataSource)`,
    );
  }
  return ctx.manager;
}
