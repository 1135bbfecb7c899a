import type { FailureHandler } from '../retry/failure-handler.service';
import { callNext, type MessageMiddleware } from './message-middleware';

/**
 * The outermost stage: acknowledges a delivery only after everything inside it resolved, and hands a failure
 * to the failure handler (retry or dead-letter). A handler that throws is never acknowledged as done.
 */
export function settleMiddleware(failures: FailureHandler): MessageMiddleware {
  return (next) => (delivery) =>
    callNext(next, delivery).then(
      () => {
        delivery.ack();
      },
      (error: unknown) => failures.handle(delivery, error),
    );
}
