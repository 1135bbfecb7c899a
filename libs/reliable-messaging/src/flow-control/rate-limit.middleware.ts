import pThrottle from 'p-throttle';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { MessageMiddleware } from '../pipeline/message-middleware';

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
  // NOTE: p-throttle's types give the throttled function the return type of the one it wraps, but it always
  // returns a promise that settles when the call may run; wrapping a promise-returning function makes the
  // types say so.
  const gate = pThrottle({ limit: rateLimit.limit, interval: rateLimit.periodMs, strict: true })(() =>
    Promise.resolve(),
  );
  return (next) => async (delivery) => {
    await gate();
    await next(delivery);
  };
}
