import type { MessageContextStorage } from '../context/message-context.storage';
import type { MessageHandler } from './message-middleware';
import { refusalOf, type NestHandler } from './nest-handler';

/**
 * The end of the pipeline: runs the user's handler, wrapped by Nest (`createNestHandler`), with the payload and
 * its MessageContext, inside the message context storage so that what it publishes inherits correlation and
 * causation. An error thrown before the handler was entered is a guard's or a pipe's, and `refusalOf` says
 * whether it refuses the message for good.
 */
export function invokeHandler(handler: NestHandler, storage: MessageContextStorage): MessageHandler {
  return (delivery) => {
    try {
      const context = delivery.toContext();
      // The handler's result is never read: the stages above only wait for it to settle.
      const run = storage.run(context, handler, delivery.payload, context) as Promise<void>;
      delivery.handlerRun = run;
      return run.catch((error: unknown) => {
        throw context.handlerEntered ? error : refusalOf(error);
      });
    } catch (error) {
      return Promise.reject(error);
    }
  };
}
