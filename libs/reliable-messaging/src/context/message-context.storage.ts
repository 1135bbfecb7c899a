import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable } from '@nestjs/common';
import type { MessageContext } from './message-context';

/**
 * Carries the message being handled through the handler's async calls, so that what it publishes inherits
 * correlation and causation ids without being passed along by hand.
 */
@Injectable()
export class MessageContextStorage {
  private readonly storage = new AsyncLocalStorage<MessageContext>();

  /** Runs `fn(...args)` with `context` as the current message; the arguments spare callers a closure. */
  run<A extends unknown[], T>(context: MessageContext, fn: (...args: A) => T, ...args: A): T {
    return this.storage.run(context, fn, ...args);
  }

  current(): MessageContext | undefined {
    return this.storage.getStore();
  }
}
