import { type CallHandler, type ExecutionContext, Logger, type NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { tap } from 'rxjs/operators';
import { installFaultPoints as installModuleFaultPoints } from 'nestjs-reliable-messaging/testing';

/** Set to `1` by the fault matrix (`npm run faults`) only: installs the fault points below. */
export const FAULT_POINTS_ENV = 'FAULT_POINTS';
/** With the fault points: each acknowledgement is sent this many ms after the handler's commit. */
export const FAULT_ACK_DELAY_ENV = 'FAULT_ACK_DELAY_MS';
/** With the fault points, `1`: the process SIGKILLs itself after a `POST`'s transaction commits, before it answers. */
export const FAULT_KILL_AFTER_COMMIT_ENV = 'FAULT_KILL_AFTER_COMMIT';
/** Logged just before that SIGKILL. */
export const KILLED_AFTER_COMMIT_LINE =
  'fault point: killing the process after the commit, before the response';
/**
 * With the fault points, a message type: the first delivery of that type whose handler committed never gets its
 * ack, and {@link ACK_HELD_LINE} is logged, so the fault matrix can kill the process between two of a flow's steps.
 */
export const FAULT_HOLD_ACK_OF_ENV = 'FAULT_HOLD_ACK_OF';
/** Logged when that ack is held: `<line> <type> <message id>`. */
export const ACK_HELD_LINE = 'fault point: holding the ack of a committed';
/** The signal that stops the outbox relay between the broker's confirm and marking the rows. */
export const RELAY_STOP_SIGNAL = 'SIGUSR2';
/** Logged when the relay has stopped there, so the fault matrix knows when to kill. */
export const RELAY_STOPPED_LINE =
  'fault point: the broker confirmed outbox rows that are not marked published';

/**
 * Moments a crash can hit that random timing rarely finds, opened for the fault matrix through the module's
 * fault points (`nestjs-reliable-messaging/testing`). They are installed only when `FAULT_POINTS=1`:
 *
 * - `FAULT_ACK_DELAY_MS=n` sends each acknowledgement n ms after the handler's transaction committed, so a
 *   SIGKILL lands between commit and ack on many deliveries at once;
 * - `FAULT_HOLD_ACK_OF=<type>` holds the ack of the first committed delivery of that message type and logs
 *   {@link ACK_HELD_LINE}: the process is then killed between that step of the order's flow and the next;
 * - SIGUSR2 stops the outbox relay at its next batch after the broker has confirmed it and before the rows are
 *   marked published, and logs {@link RELAY_STOPPED_LINE}; the relay then waits for the SIGKILL;
 * - `FAULT_KILL_AFTER_COMMIT=1` kills the process after the first `POST` whose transaction committed, before
 *   its response is written (see {@link faultPointInterceptors}): the client's response is lost, the order kept.
 */
export function installFaultPoints(env: NodeJS.ProcessEnv): void {
  if (env[FAULT_POINTS_ENV] !== '1') return;
  const logger = new Logger('FaultPoints');
  const ackDelayMs = Number(env[FAULT_ACK_DELAY_ENV] ?? 0);
  const delayAcks = Number.isFinite(ackDelayMs) && ackDelayMs > 0;
  if (delayAcks) logger.warn(`acknowledgements are sent ${ackDelayMs} ms after the commit`);
  let holdAckOf = env[FAULT_HOLD_ACK_OF_ENV] || undefined;
  let stopRelay = false;
  process.on(RELAY_STOP_SIGNAL, () => (stopRelay = true));
  installModuleFaultPoints({
    beforeAck: (messageId, type) => {
      if (holdAckOf !== undefined && type === holdAckOf) {
        holdAckOf = undefined;
        logger.warn(`${ACK_HELD_LINE} ${type} ${messageId ?? '?'}`);
        return 'hold';
      }
      return delayAcks ? ackDelayMs : undefined;
    },
    beforeMarkRelayed: (outcomes) => {
      if (!stopRelay || !outcomes.some((o) => o.outcome === 'published')) return;
      logger.warn(`${RELAY_STOPPED_LINE} (${outcomes.length} row(s))`);
      return new Promise<never>(() => undefined);
    },
  });
}

/**
 * The app-wide interceptors of the fault points, for `app.useGlobalInterceptors()`; none unless `FAULT_POINTS=1`.
 * A global interceptor is outside the route's own: it sees the handler's result after `@Idempotent()` committed
 * the order and its key, and before Nest writes the response.
 */
export function faultPointInterceptors(env: NodeJS.ProcessEnv): NestInterceptor[] {
  if (env[FAULT_POINTS_ENV] !== '1' || env[FAULT_KILL_AFTER_COMMIT_ENV] !== '1') return [];
  return [new KillAfterCommitInterceptor()];
}

class KillAfterCommitInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.switchToHttp().getRequest<{ method?: string }>().method !== 'POST') return next.handle();
    return next.handle().pipe(
      tap(() => {
        new Logger('FaultPoints').warn(KILLED_AFTER_COMMIT_LINE);
        process.kill(process.pid, 'SIGKILL');
      }),
    );
  }
}
