import { Logger } from '@nestjs/common';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import { HandlerDeadline } from './handler-deadline';
import type { OverdueHandlers } from './overdue-handlers.service';

/** A consumer's resolved deadline settings. */
export interface DeadlineSettings {
  /** How long a handler may run before it counts as failed. */
  deadlineMs: number;
  /** How far `extendDeadline()` may push it, counted from when the delivery arrived. */
  limitMs: number;
}

/**
 * Gives each handler run a deadline (the consumer's acknowledgement window). Past it, the handler's
 * `ctx.signal` is aborted and the attempt fails with HandlerDeadlineExceededError, which the failure handler
 * retries like any other failure; the concurrency slot is freed so a hung handler cannot stall the consumer.
 * A handler that ignores the signal runs on in the background and is counted as overdue until it returns.
 */
export function deadlineMiddleware(
  consumer: ConsumerDefinition,
  settings: DeadlineSettings,
  overdue: OverdueHandlers,
): MessageMiddleware {
  const logger = new Logger('ReliableMessaging');
  const trackOverdue = (work: Promise<void>): void => {
    const startedAt = Date.now();
    overdue.track(consumer.queue, work);
    void work
      .catch(() => undefined)
      .finally(() =>
        logger.warn(
          `${consumer.name}: a handler returned ${Date.now() - startedAt} ms after its deadline; its delivery had already been retried (honour ctx.signal to stop early)`,
        ),
      );
  };
  return (next) => (delivery) => {
    const deadline = new HandlerDeadline(
      consumer.name,
      settings.deadlineMs,
      delivery.receivedAt + settings.limitMs,
      () => delivery.abort,
    );
    delivery.deadline = deadline;
    let work: Promise<void>;
    try {
      work = next(delivery);
    } catch (error) {
      deadline.clear();
      return Promise.reject(error);
    }
    // NOTE: one promise settled by whichever comes first, the work or the shared sweeper firing the deadline,
    // rather than a timer and a promise per delivery raced against the work.
    return new Promise<void>((resolve, reject) => {
      deadline.onExpire = (error) => {
        trackOverdue(work);
        reject(error);
      };
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
  };
}
