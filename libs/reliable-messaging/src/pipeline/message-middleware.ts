import type { InboundDelivery } from './inbound-delivery';

/**
 * Handles a delivery; resolves when the work is done, rejects when it failed. A failure is a rejection, never
 * a synchronous throw, so every stage around it sees it the same way.
 */
export type MessageHandler = (delivery: InboundDelivery) => Promise<void>;

/**
 * One step of the reliability pipeline, Watermill-style: it gets the next handler and returns its own. A stage
 * with nothing to do after `next` returns next's promise as it is rather than awaiting it: every promise costs
 * a microtask and Node's AsyncLocalStorage hooks on each delivery, so only stages that act on the outcome add one.
 */
export type MessageMiddleware = (next: MessageHandler) => MessageHandler;

/** Composes middlewares so the first listed runs outermost. */
export function compose(middlewares: readonly MessageMiddleware[], terminal: MessageHandler): MessageHandler {
  return middlewares.reduceRight<MessageHandler>((next, middleware) => middleware(next), terminal);
}

/** Runs `next`, turning a synchronous throw into a rejection. */
export function callNext(next: MessageHandler, delivery: InboundDelivery): Promise<void> {
  try {
    return next(delivery);
  } catch (error) {
    return Promise.reject(error);
  }
}
