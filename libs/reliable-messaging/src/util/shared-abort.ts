import { setMaxListeners } from 'node:events';

/**
 * An AbortController whose signal every delivery in flight may wait on at once: a consumer's drain, the app's
 * shutdown. NOTE: Node warns (MaxListenersExceededWarning) past 10 listeners on one AbortSignal, taking them for
 * a leak; here they are bounded by the deliveries in flight, and each is removed when its wait ends.
 */
export function sharedAbortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(Number.POSITIVE_INFINITY, controller.signal);
  return controller;
}
