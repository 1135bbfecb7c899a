import { Logger } from '@nestjs/common';
import { installFaultPoints as installModuleFaultPoints } from '@app/reliable-messaging/testing';

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
 * Moments a crash can hit that random timing rarely finds, opened for the fault matrix through the module's
 * fault points (`@app/reliable-messaging/testing`). They are installed only when `FAULT_POINTS=1`:
 *
 * - `FAULT_ACK_DELAY_MS=n` sends each acknowledgement n ms after the handler's transaction committed, so a
 *   SIGKILL lands between commit and ack on many deliveries at once;
 * - SIGUSR2 stops the outbox relay at its next batch after the broker has confirmed it and before the rows are
 *   marked published, and logs {@link RELAY_STOPPED_LINE}; the relay then waits for the SIGKILL.
 */
export function installFaultPoints(env: NodeJS.ProcessEnv): void {
  if (env[FAULT_POINTS_ENV] !== '1') return;
  const logger = new Logger('FaultPoints');
  const ackDelayMs = Number(env[FAULT_ACK_DELAY_ENV] ?? 0);
  const delayAcks = Number.isFinite(ackDelayMs) && ackDelayMs > 0;
  if (delayAcks) logger.warn(`acknowledgements are sent ${ackDelayMs} ms after the commit`);
  let stopRelay = false;
  process.on(RELAY_STOP_SIGNAL, () => (stopRelay = true));
  installModuleFaultPoints({
    beforeAck: () => (delayAcks ? ackDelayMs : undefined),
    beforeMarkRelayed: (outcomes) => {
      if (!stopRelay || !outcomes.some((o) => o.outcome === 'published')) return;
      logger.warn(`${RELAY_STOPPED_LINE} (${outcomes.length} row(s))`);
      return new Promise<never>(() => undefined);
    },
  });
}
