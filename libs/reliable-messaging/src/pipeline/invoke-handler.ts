import type { MessageContextStorage } from '../context/message-context.storage';
import type { InboundDelivery } from './inbound-delivery';
import type { MessageHandler } from './message-middleware';
import { isObservable, lastValueFrom } from 'rxjs';
import { refusalOf, type NestHandler } from './nest-handler';

/**
 * The end of the pipeline: runs the user's handler, wrapped by Nest (`createNestHandler`), with the payload and
 * its MessageContext, inside the message context storage so that what it publishes inherits correlation and
 * causation. An error thrown before the handler was entered is a guard's or a pipe's, and `refusalOf` says
 * whether it refuses the message for good. With `keepResult` (a reply consumer) what the handler returned is kept
 * on the delivery for its reply, an Observable's last value awaited inside the attempt (and its transaction).
 */
export function invokeHandler(
  handler: NestHandler,
  storage: MessageContextStorage,
  keepResult = false,
): MessageHandler {
  return (delivery) => {
    try {
      const context = delivery.toContext();
      // Unless it is a reply, the handler's result is never read: the stages above only wait for it to settle.
      const started = storage.run(context, handler, delivery.payload, context);
      const run = keepResult ? keep(delivery, started) : (started as Promise<void>);
      delivery.handlerRun = run;
      return run.catch((error: unknown) => {
        throw context.handlerEntered ? error : refusalOf(error);
      });
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

async function keep(delivery: InboundDelivery, run: Promise<unknown>): Promise<void> {
  const returned = await run;
  const value = isObservable(returned)
    ? await lastValueFrom(returned, { defaultValue: undefined })
    : returned;
  delivery.handlerResult = { value };
}
