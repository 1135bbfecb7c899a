import { Logger } from '@nestjs/common';
import type { ConsumeMessage } from 'amqplib';
import { RedeliveryLimitError } from '../errors/redelivery-limit.error';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import type { RetryPolicy } from '../retry/retry-policy';
import { sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';

/** The broker's count of earlier deliveries of a message, set by quorum queues on a redelivery. */
const DELIVERY_COUNT_HEADER = 'x-delivery-count';
/** How often a partition waiting on a handler past its deadline checks whether it has returned. */
const OVERDUE_POLL_MS = 100;

/** What the ordered retry stage needs from the rest of the module. */
export interface OrderedRetryDependencies {
  /** The consumer's retry policy (attempt bound, backoff, error classification). */
  policy: RetryPolicy;
  /** How long after its arrival a delivery may still be held: the broker's consumer timeout less its margin. */
  holdLimitMs: number;
  /** Handlers of a queue still running past their deadline (the deadline stage tracks them). */
  overdueCount: () => number;
  /** Aborts when the app starts shutting down. */
  stopping: AbortSignal;
  /** Dead-letters the delivery (or hands it back when that fails) and settles it. */
  deadLetter: (delivery: InboundDelivery, error: unknown, reason: string) => Promise<void>;
  /** Counts one failed attempt that is retried in place. */
  recordRetry: (delivery: InboundDelivery) => void;
}

/** The in-place retry stage of a consumer whose intake retries in place (an ordered one); undefined for one that retries through the delay levels. */
export function orderedRetryStage(
  plan: Pick<ConsumerPlan, 'queue' | 'intake' | 'retry' | 'deadline'>,
  {
    failures,
    overdue,
    metrics,
    shutdown,
  }: Pick<StageDependencies, 'failures' | 'overdue' | 'metrics' | 'shutdown'>,
): MessageMiddleware | undefined {
  if (!plan.intake.retriesInPlace) return undefined;
  return orderedRetryMiddleware({
    policy: plan.retry,
    holdLimitMs: plan.deadline.limitMs,
    overdueCount: () => overdue.count(plan.queue),
    stopping: shutdown,
    deadLetter: (delivery, error, reason) => failures.deadLetterOrRequeue(delivery, error, reason),
    recordRetry: (delivery) => {
      metrics.failed.inc(metrics.labelsOf(delivery));
      metrics.recordRetry(delivery);
    },
  });
}

/**
 * The retry stage of an ordered consumer (`ordering: 'queue'` or by key). A delayed retry would take the message
 * out of its queue and let the next ones of its key pass it, so an ordered consumer retries in place instead:
 * it keeps the delivery, waits the policy's backoff, and runs the rest of the pipeline again, holding its queue
 * (or partition) meanwhile, until `maxAttempts`. Then the failure goes on to the failure handler, which
 * dead-letters it; only then do the messages behind it move on.
 *
 * A redelivery (the process that had the message died) is handled in place too: republishing it to the tail,
 * as unordered consumers do to count it, would reorder it. It is bounded by the broker's own count instead
 * (quorum queues' `x-delivery-count`): past `maxRedeliveries` it is dead-lettered as `redelivery-limit`.
 *
 * While a handler runs past its deadline, the next attempt waits for it to return, so two handlers of the same
 * queue never overlap. A retry that would hold the delivery past the broker's consumer timeout dead-letters
 * instead; on shutdown the delivery goes back to the head of its queue, and the ones behind it follow.
 */
export function orderedRetryMiddleware(deps: OrderedRetryDependencies): MessageMiddleware {
  const logger = new Logger('ReliableMessaging');
  const { policy } = deps;
  return (next) => async (delivery) => {
    const redeliveries = brokerDeliveryCount(delivery.raw);
    if (redeliveries > policy.options.maxRedeliveries) throw new RedeliveryLimitError(redeliveries);
    for (;;) {
      try {
        await next(delivery);
        return;
      } catch (error) {
        // Released (its channel closed): the message is back at the head of its queue, not ours to retry.
        if (delivery.isSettled) throw error;
        await waitForOverdueHandlers(deps);
        const decision = policy.decide(error, delivery.attempt);
        if (decision.action === 'dead-letter') throw error;
        const what = `${delivery.consumer.name} failed on message ${delivery.envelope?.messageId ?? '?'} (attempt ${delivery.attempt}): ${errorMessage(error)}`;
        if (deps.stopping.aborted) return handBack(delivery, logger, `${what}; shutting down`);
        if (Date.now() + decision.delayMs >= delivery.receivedAt + deps.holdLimitMs) {
          logger.warn(`${what}; no time left to retry before the broker's consumer timeout, dead-lettering`);
          await deps.deadLetter(delivery, error, 'attempts-exhausted');
          return;
        }
        logger.warn(`${what}; attempt ${decision.nextAttempt} in place in ${decision.delayMs} ms`);
        deps.recordRetry(delivery);
        await sleep(decision.delayMs, deps.stopping);
        if (deps.stopping.aborted) return handBack(delivery, logger, `${what}; shutting down`);
        delivery.retryInPlace(decision.nextAttempt);
      }
    }
  };
}

/** Earlier deliveries of this message by the broker's count; 0 unless it is a redelivery carrying one. */
export function brokerDeliveryCount(message: ConsumeMessage): number {
  if (!message.fields.redelivered) return 0;
  const raw = (message.properties.headers ?? {})[DELIVERY_COUNT_HEADER] as unknown;
  const value = typeof raw === 'number' ? raw : typeof raw === 'bigint' ? Number(raw) : NaN;
  return Number.isInteger(value) && value > 0 ? value : 0;
}

async function waitForOverdueHandlers(deps: OrderedRetryDependencies): Promise<void> {
  while (deps.overdueCount() > 0 && !deps.stopping.aborted) await sleep(OVERDUE_POLL_MS, deps.stopping);
}

/**
 * Gives the delivery back as the consumer's intake does: unacknowledged, for the channel's close to return at
 * shutdown. A requeue now would hand it straight back to this consumer, which still holds the queue until its
 * channel closes and starts nothing delivered after it, so the close returns all of them in their order
 * (intake/ordered-intake.ts).
 */
function handBack(delivery: InboundDelivery, logger: Logger, what: string): void {
  logger.warn(`${what}: the message goes back to the head of its queue`);
  delivery.giveBack();
}
