import type { MessageContextStorage } from '../context/message-context.storage';
import type { MessageHandler } from './message-middleware';

/** A handler wrapped by Nest with its guards, interceptors and pipes. */
export type NestHandler = (...args: unknown[]) => Promise<unknown>;

/**
 * The end of the pipeline: runs the user's handler with the payload and its MessageContext, inside the
 * message context storage so that what it publishes inherits correlation and causation.
 */
export function invokeHandler(handler: NestHandler, storage: MessageContextStorage): MessageHandler {
  return (delivery) => {
    try {
      const context = delivery.toContext();
      // The handler's result is never read: the stages above only wait for it to settle.
      const run = storage.run(context, handler, delivery.payload, context) as Promise<void>;
      delivery.handlerRun = run;
      return run;
    } catch (error) {
      return Promise.reject(error);
    }
  };
}
