import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { MessageMiddleware } from '../pipeline/message-middleware';

type Gate = () => Promise<void>;

/**
 * Holds each delivery until the consumer's rate limit lets its handler start (a strict sliding window from
 * p-throttle: no `periodMs` window ever sees more than `limit` starts). Waiting deliveries stay unacknowledged
 * and count against the prefetch, so keep the prefetch small on a rate-limited consumer. Only for a consumer with
 * a `rateLimit`.
 */
export function rateLimitStage({
  rateLimit,
}: Pick<ConsumerPlan, 'rateLimit'>): MessageMiddleware | undefined {
  if (!rateLimit) return undefined;
  // NOTE: p-throttle is ESM-only. Imported when a consumer has a rate limit (at startup, the first delivery
  // awaits it), not when the module loads, so that the CommonJS build loads under CommonJS Jest, which cannot
  // require() an ES module.
  const gate: Promise<Gate> = import('p-throttle').then(({ default: pThrottle }) => {
    // NOTE: p-throttle's types give the throttled function the return type of the one it wraps, but it always
    // returns a promise that settles when the call may run; wrapping a promise-returning function makes the
    // types say so.
    return pThrottle({ limit: rateLimit.limit, interval: rateLimit.periodMs, strict: true })(() =>
      Promise.resolve(),
    );
  });
  // A failure to load surfaces on the first delivery, as the handler's; never as an unhandled rejection.
  gate.catch(() => undefined);
  return (next) => async (delivery) => {
    await (
      await gate
    )();
    await next(delivery);
  };
}
