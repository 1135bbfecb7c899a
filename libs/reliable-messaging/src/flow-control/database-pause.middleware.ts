import { databaseOutageEvidence } from '../database/database-errors';
import { HandlerDeadlineExceededError } from '../errors/handler-deadline-exceeded.error';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';

/**
 * In-place repeats allowed after an "unavailable" error that no probe confirmed (the database answered at
 * once). A real outage repeats for free as long as it lasts; an error that only looks like one (a handler
 * using its transaction after it ended, another database refusing) goes on as an ordinary failure.
 */
const UNCONFIRMED_REPEATS = 2;

/**
 * Pauses a consumer, not its messages, while the module's database is down. A delivery that arrives during an
 * outage waits before it starts, holding its concurrency slot, so the consumer takes no new work; a run that
 * fails because the database became unavailable (connection refused or lost, backend terminated, server
 * shutting down, too many clients) waits for the database to answer and runs again as the same attempt. Neither
 * spends an attempt, and the delivery is never requeued, so the broker never flags it as redelivered.
 *
 * A database that hangs instead of refusing shows as the driver's read timeout (`query_timeout`) or as the
 * handler's deadline passing; either counts as an outage only when the database then fails to answer a probe.
 * A run abandoned at its deadline is waited for before the same attempt runs again, so the two never overlap.
 *
 * The wait ends early when the consumer drains (shutdown) or when the broker's consumer timeout comes near;
 * the delivery then goes back to its queue as a fresh copy (an ordered consumer's, in place). Outside the
 * deadline and the rate limit, so the wait counts against neither. Only for an app with a `dataSource`.
 */
export function databasePauseStage(
  _plan: unknown,
  { database: availability, failures }: Pick<StageDependencies, 'database' | 'failures'>,
): MessageMiddleware | undefined {
  if (!availability) return undefined;

  /**
   * Waits for the database; false when the delivery went back to its queue instead, or when its channel closed
   * meanwhile (the broker has it back, so running it here too would handle it twice).
   */
  const held = async (delivery: InboundDelivery): Promise<boolean> => {
    const signal = holdSignal(delivery);
    await availability.whenAvailable(signal);
    if (delivery.isSettled) return false;
    if (!signal.aborted) return true;
    // Gives the delivery back without costing it an attempt or a redelivery.
    await failures.returnToQueue(
      delivery,
      delivery.stopping.aborted
        ? 'shutting down while the database is unavailable'
        : "the database stayed unavailable until the broker's consumer timeout came near",
    );
    return false;
  };

  /** Waits for the run abandoned at its deadline to return; false when the hold ended first. */
  const returnedInTime = async (delivery: InboundDelivery): Promise<boolean> => {
    const signal = holdSignal(delivery);
    if (signal.aborted) return false;
    let release!: () => void;
    const holdEnds = new Promise<void>((resolve) => (release = resolve));
    signal.addEventListener('abort', release, { once: true });
    await Promise.race([delivery.lingering, holdEnds]);
    signal.removeEventListener('abort', release);
    return !signal.aborted;
  };

  return (next) => async (delivery) => {
    let unconfirmed = 0;
    for (;;) {
      if (!availability.isAvailable && !(await held(delivery))) return;
      try {
        await next(delivery);
        return;
      } catch (error) {
        const evidence =
          error instanceof HandlerDeadlineExceededError ? 'deadline' : databaseOutageEvidence(error);
        if (delivery.isSettled || evidence === undefined) throw error;
        // A socket error or a deadline alone may be another service's doing (an HTTP API the handler called) or
        // the handler's own: the database answering now says this failure is the message's to count.
        if (evidence !== 'unavailable' && availability.isAvailable && (await availability.answers()))
          throw error;
        const probesBefore = availability.probeFailures;
        availability.reportOutage(error);
        // The abandoned run may still be waiting on the database: no rerun beside it, and no copy returned to
        // the queue while it could still commit. A run that outlives the hold fails as an attempt after all.
        if (delivery.lingering && !(await returnedInTime(delivery))) throw error;
        if (!(await held(delivery))) return;
        unconfirmed = availability.probeFailures === probesBefore ? unconfirmed + 1 : 0;
        if (unconfirmed > UNCONFIRMED_REPEATS) throw error;
        delivery.retryInPlace(delivery.attempt);
      }
    }
  };
}

/** Aborts when a hold must end: the consumer drains, or the broker's consumer timeout comes near. */
export function holdSignal(delivery: InboundDelivery): AbortSignal {
  const holdFor = delivery.holdUntil - Date.now();
  return Number.isFinite(holdFor)
    ? AbortSignal.any([delivery.stopping, AbortSignal.timeout(Math.max(0, holdFor))])
    : delivery.stopping;
}
