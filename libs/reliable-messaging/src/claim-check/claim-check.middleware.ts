import { Logger } from '@nestjs/common';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { holdSignal } from '../flow-control/database-pause.middleware';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessageMiddleware } from '../pipeline/message-middleware';
import type { StageDependencies } from '../pipeline/pipeline-stage';
import { equalJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { ClaimCheckReader } from './claim-check-reader.service';

/** Backoff while the claim-check store is unreachable: first ceiling and cap. */
const STORE_RETRY_INITIAL_MS = 200;
const STORE_RETRY_MAX_MS = 5_000;

/**
 * Puts a claim-checked delivery's full body back before it is decoded, so decoding, validation and the handler
 * see the payload its publisher sent. A forged, missing, corrupt or oversized claim check is refused by the
 * reader (dead-lettered with its reason, never retried). While the store cannot be reached the delivery waits,
 * holding its slot and spending no attempt, as a database outage does; the wait ends when the consumer drains or
 * the broker's consumer timeout comes near, and the delivery then goes back to its queue as a fresh copy. Every
 * consumer has it: one that has no store refuses a claim check rather than decode an empty body.
 */
export function claimCheckStage(
  _plan: unknown,
  { claimChecks, failures }: Pick<StageDependencies, 'claimChecks' | 'failures'>,
): MessageMiddleware {
  const logger = new Logger('ReliableMessaging');

  /** Resolves the body, waiting out an outage of the store; false when the delivery went back to its queue. */
  const resolved = async (delivery: InboundDelivery): Promise<boolean> => {
    for (let tries = 1; ; tries += 1) {
      try {
        delivery.claimedBody = await claimChecks.resolve(delivery.raw);
        return true;
      } catch (error) {
        if (!(error instanceof ClaimCheckStoreUnavailableError)) throw error;
        if (tries === 1) {
          logger.warn(`${delivery.consumer.name}: ${errorMessage(error)}; the delivery waits for the store`);
        }
        const signal = holdSignal(delivery);
        await sleep(equalJitterDelay(tries, STORE_RETRY_INITIAL_MS, STORE_RETRY_MAX_MS), signal);
        if (delivery.isSettled) return false;
        if (signal.aborted) {
          await failures.returnToQueue(
            delivery,
            delivery.stopping.aborted
              ? 'shutting down while the claim-check store is unavailable'
              : "the claim-check store stayed unavailable until the broker's consumer timeout came near",
          );
          return false;
        }
      }
    }
  };

  return (next) => (delivery) =>
    ClaimCheckReader.carriesReference(delivery.raw)
      ? resolved(delivery).then((ok) => (ok ? next(delivery) : undefined))
      : next(delivery);
}
