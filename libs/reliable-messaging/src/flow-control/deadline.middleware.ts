import { Logger } from '@nestjs/common';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { HandlerDeadline } from './handler-deadline';

/** A handler that takes at least this long to return after its signal aborted is logged as ignoring it. */
const OVERDUE_REPORT_MS = 1_000;

/**
 * Gives each handler run a deadline. Past it, the handler's `ctx.signal` is aborted (the inbox rolls its
 * transaction back at once) and the attempt fails with HandlerDeadlineExceededError. The work still running is
 * left on the delivery as `lingering`: the settle stage waits for it before it schedules the retry, so a retry
 * never runs beside the attempt it repeats, and the concurrency slot stays taken until the handler returns. A
 * handler that ignores its signal is logged and counted as overdue (metric and liveness) until it returns.
 * Every consumer has a deadline.
 */
export function deadlineStage(
  consumer: Pick<ConsumerPlan, 'name' | 'queue' | 'deadline'>,
  { overdue }: Pick<StageDependencies, 'overdue'>,
): MessageMiddleware {
  const settings = consumer.deadline;
  const logger = new Logger('ReliableMessaging');
  const trackOverdue = (delivery: InboundDelivery, work: Promise<void>): void => {
    const startedAt = Date.now();
    const lingering = Promise.allSettled([work, delivery.handlerRun]).then(() => undefined);
    delivery.lingering = lingering;
    overdue.track(consumer.queue, lingering);
    void lingering.then(() => {
      const late = Date.now() - startedAt;
      if (late >= OVERDUE_REPORT_MS) {
        logger.warn(
          `${consumer.name}: a handler returned ${late} ms after its deadline, holding its slot meanwhile (honour ctx.signal to stop early)`,
        );
      }
    });
  };
  // NOTE: one promise settled by whichever comes first, the work or the shared sweeper firing the deadline,
  // rather than a timer and a promise per delivery raced against the work.
  return (next) => (delivery) =>
    new Promise<void>((resolve, reject) => {
      let work: Promise<void> | undefined;
      const deadline = new HandlerDeadline(
        consumer.name,
        settings.deadlineMs,
        delivery.receivedAt + settings.limitMs,
        () => delivery.abort,
        (error) => {
          if (work) trackOverdue(delivery, work);
          reject(error);
        },
      );
      delivery.deadline = deadline;
      try {
        work = next(delivery);
      } catch (error) {
        deadline.clear();
        reject(error);
        return;
      }
      work.then(
        () => {
          deadline.clear();
          resolve();
        },
        (error: unknown) => {
          deadline.clear();
          reject(error);
        },
      );
    });
}
