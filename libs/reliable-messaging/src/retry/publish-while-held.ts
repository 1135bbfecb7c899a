import type { Logger } from '@nestjs/common';
import type { InboundDelivery } from '../pipeline/inbound-delivery';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';

const BASE_MS = 500;
const CAP_MS = 10_000;

/**
 * Publishes what settles a delivery (its retry, dead letter or returned copy) and, when the broker cannot take
 * it (disconnected, blocked, refusing), keeps the delivery and its slot and tries again with backoff: an outage
 * of the broker is not the message's fault, so it must not cost an attempt or a redelivery. Gives up only when
 * the delivery's channel is gone (the broker already has the message back), when the consumer drains, or when
 * the broker's consumer timeout comes near; then the delivery goes back unacknowledged. True once published.
 */
export async function publishWhileHeld(
  delivery: InboundDelivery,
  publish: () => Promise<void>,
  what: string,
  logger: Logger,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    // Released meanwhile (its channel closed): the broker has the message back, and a copy would double it.
    if (delivery.isSettled) return false;
    try {
      await publish();
      return true;
    } catch (error) {
      if (delivery.isSettled) return false;
      const cause = errorMessage(error);
      if (delivery.stopping.aborted || Date.now() >= delivery.holdUntil) {
        logger.error(`${what} failed (${cause}); giving the message back to the broker unacknowledged`);
        delivery.giveBack();
        return false;
      }
      const delay = Math.min(
        fullJitterDelay(attempt, BASE_MS, CAP_MS) + BASE_MS,
        Math.max(0, delivery.holdUntil - Date.now()),
      );
      if (attempt === 1) logger.warn(`${what} failed (${cause}); holding the message and trying again`);
      await sleep(delay, delivery.stopping);
    }
  }
}
