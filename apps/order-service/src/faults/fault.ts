import type { Pool } from 'pg';
import type { DemoEnvironment } from '../demo/demo-environment';
import type { ExpectedDeadLetter } from '../demo/demo-ledger';
import type { FakeReceiptServer } from './fake-receipt-server';
import type { HarnessBroker } from './harness-broker';
import type { ManagedApp } from './managed-app';

/** What a fault can reach while it runs. */
export interface FaultContext {
  app: ManagedApp;
  receipts: FakeReceiptServer;
  /** The run's database and namespace. */
  environment: DemoEnvironment;
  /** The harness's pool on the run's database. */
  database: Pool;
  broker: HarnessBroker;
  /** The app's handler deadline (`HANDLER_DEADLINE_MS`). */
  handlerDeadlineMs: number;
  /** Aborted on Ctrl-C or SIGTERM: the fault stops holding and restores at once. */
  signal: AbortSignal;
  /** Records a dead letter the fault planted on purpose; every other one is wrong. */
  expectDeadLetter(deadLetter: ExpectedDeadLetter): void;
  /** Adds a note to the fault's row, e.g. what a kill landed on. */
  note(text: string): void;
  /** Records a problem that fails the run, beyond the table's own criteria (the soak's memory growth). */
  fail(problem: string): void;
}

/** One fault of the matrix. */
export interface Fault {
  /** Short and stable, for `--only`, e.g. `pg-stop-60s`. */
  readonly name: string;
  /** What it does, for the table's legend. */
  readonly description: string;
  /**
   * Whether it disturbs the machine-wide broker or PostgreSQL, so that everyone else using them at the same time
   * notices (a stopped broker, an alarm, a stopped database, a full connection table).
   */
  readonly machineWide: boolean;
  /**
   * Breaks something, holds it, and restores it. Restoring happens in a `finally`, so a failure or an abort
   * (`context.signal`) restores too. Resolves once everything is restored: the fault's end, from which the time to
   * recover is measured.
   */
  inject(context: FaultContext): Promise<void>;
  /**
   * Where the fault's cycle runs when the machine's broker will not do (fault 14 needs a 3-node cluster). Absent,
   * the cycle runs on the run's own app and broker.
   */
  readonly stage?: FaultStage;
}

/**
 * A setting a fault's cycle runs in: entered before the cycle's load starts, left once its orders have settled
 * (or failed to), even when the cycle threw.
 */
export interface FaultStage {
  /** Builds the setting and moves the app onto it; resolves with what the cycle uses instead of the run's own. */
  enter(context: Pick<FaultContext, 'app' | 'signal'>): Promise<EnteredStage>;
}

/** A stage the app runs on. */
export interface EnteredStage {
  /** The broker the cycle reads dead letters from. */
  broker: HarnessBroker;
  /** Moves the app back onto the run's broker and tears the setting down. */
  leave(): Promise<void>;
}

/** Waits `ms`; rejects with the signal's reason when it aborts first. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', aborted, { once: true });
    function done(): void {
      signal.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted(): void {
      clearTimeout(timer);
      reject(signal.reason);
    }
  });
}

/** Polls `probe` every 250 ms until it resolves true; rejects with `what` after `timeoutMs` or on abort. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() >= deadline) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await pause(250, signal);
  }
}

/** A random whole number of ms from `min` to `max`. */
export function between(min: number, max: number): number {
  return Math.round(min + Math.random() * (max - min));
}
