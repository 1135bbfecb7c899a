import type { InboundDelivery } from './inbound-delivery';

/** Handles a delivery; resolves when the work is done, rejects when it failed. */
export type MessageHandler = (delivery: InboundDelivery) => Promise<void>;

/** One step of the reliability pipeline, Watermill-style: it gets the next handler and returns its own. */
export type MessageMiddleware = (next: MessageHandler) => MessageHandler;

/** Composes middlewares so the first listed runs outermost. */
export function compose(middlewares: readonly MessageMiddleware[], terminal: MessageHandler): MessageHandler {
  return middlewares.reduceRight<MessageHandler>((next, middleware) => middleware(next), terminal);
}
