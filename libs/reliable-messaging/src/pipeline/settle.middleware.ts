import type { FailureHandler } from '../retry/failure-handler.service';
import type { StageDependencies } from './pipeline-stage';
import type { InboundDelivery } from './inbound-delivery';
import { callNext, type MessageMiddleware } from './message-middleware';

/**
 * The outermost stage: acknowledges a delivery only after everything inside it resolved, and hands a failure
 * to the failure handler (retry or dead-letter). A handler that throws is never acknowledged as done.
 *
 * An attempt abandoned at its deadline may still be running (`lingering`): the failure is handled only once it
 * has returned, so its retry never runs beside it, or when the broker's consumer timeout comes near, so the
 * delivery is still settled in time; either way the stage (and so the concurrency slot) ends when it returns.
 */
export function settleStage(
  _plan: unknown,
  { failures }: Pick<StageDependencies, 'failures'>,
): MessageMiddleware {
  return (next) => (delivery) =>
    callNext(next, delivery).then(
      () => {
        delivery.ack();
      },
      (error: unknown) =>
        delivery.lingering ? failAfterReturn(failures, delivery, error) : failures.handle(delivery, error),
    );
}

async function failAfterReturn(
  failures: FailureHandler,
  delivery: InboundDelivery,
  error: unknown,
): Promise<void> {
  const lingering = delivery.lingering;
  if (Number.isFinite(delivery.holdUntil)) {
    let timer: NodeJS.Timeout | undefined;
    const holdEnds = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, delivery.holdUntil - Date.now()));
      // A handler that never returns must not keep the process alive after shutdown.
      timer.unref();
    });
    await Promise.race([lingering, holdEnds]);
    clearTimeout(timer);
  } else {
    await lingering;
  }
  await failures.handle(delivery, error);
  await lingering;
}
