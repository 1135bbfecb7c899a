import { Logger } from '@nestjs/common';
import { InboundDelivery } from '@app/reliable-messaging/pipeline/inbound-delivery';
import { OutboxStore } from '@app/reliable-messaging/outbox/outbox-store.service';

/** Set to `1` by the fault matrix (`npm run faults`) only: installs the fault points below. */
export const FAULT_POINTS_ENV = 'FAULT_POINTS';
/** With the fault points: each acknowledgement is sent this many ms after the handler's commit. */
export const FAULT_ACK_DELAY_ENV = 'FAULT_ACK_DELAY_MS';
/** The signal that stops the outbox relay between the broker's confirm and marking the rows. */
export const RELAY_STOP_SIGNAL = 'SIGUSR2';
/** Logged when the relay has stopped there, so the fault matrix knows when to kill. */
export const RELAY_STOPPED_LINE =
  'fault point: the broker confirmed outbox rows that are not marked published';

/**
 * Moments a crash can hit that random timing rarely finds, opened for the fault matrix. They live in the sample
 * app, not in the module, and are installed only when `FAULT_POINTS=1`:
 *
 * - `FAULT_ACK_DELAY_MS=n` sends each acknowledgement n ms after the handler's transaction committed, so a
 *   SIGKILL lands between commit and ack on many deliveries at once;
 * - SIGUSR2 stops the outbox relay at its next batch after the broker has confirmed it and before the rows are
 *   marked published, and logs {@link RELAY_STOPPED_LINE}; the relay then waits for the SIGKILL.
 *
 * NOTE: both replace methods of the module's classes on their prototypes, as the module's own fault fixtures do
 * (test/fixtures/outbox-app.ts): the module has no hooks for this, on purpose.
 */
export function installFaultPoints(env: NodeJS.ProcessEnv): void {
  if (env[FAULT_POINTS_ENV] !== '1') return;
  const logger = new Logger('FaultPoints');
  const ackDelayMs = Number(env[FAULT_ACK_DELAY_ENV] ?? 0);
  if (Number.isFinite(ackDelayMs) && ackDelayMs > 0) {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- the patch calls the original with .call(this)
    const ack = InboundDelivery.prototype.ack;
    InboundDelivery.prototype.ack = function (this: InboundDelivery): boolean {
      if (this.isSettled) return false;
      setTimeout(() => ack.call(this), ackDelayMs);
      return true;
    };
    logger.warn(`acknowledgements are sent ${ackDelayMs} ms after the commit`);
  }
  let stopRelay = false;
  process.on(RELAY_STOP_SIGNAL, () => (stopRelay = true));
  // eslint-disable-next-line @typescript-eslint/unbound-method -- the patch calls the original with .call(this)
  const complete = OutboxStore.prototype.complete;
  OutboxStore.prototype.complete = async function (this: OutboxStore, runner, outcomes) {
    if (!stopRelay || !outcomes.some((o) => o.outcome === 'published')) {
      return complete.call(this, runner, outcomes);
    }
    logger.warn(`${RELAY_STOPPED_LINE} (${outcomes.length} row(s))`);
    return new Promise<never>(() => undefined);
  };
}
