import { describeExit } from '../demo/order-service-process';
import { between, pause, type Fault, type FaultContext } from './fault';
import {
  ACK_HELD_LINE,
  FAULT_ACK_DELAY_ENV,
  FAULT_HOLD_ACK_OF_ENV,
  RELAY_STOP_SIGNAL,
  RELAY_STOPPED_LINE,
} from './fault-points';

/** How late acknowledgements are sent while kills aim between commit and ack. */
const ACK_DELAY_MS = 200;

/** The sum of the app's `rm_messages_deduplicated_total`: deliveries its inbox skipped as already handled. */
export async function deduplicatedSoFar(context: FaultContext): Promise<number> {
  const text = await context.app.api.metrics(AbortSignal.timeout(5_000)).catch(() => '');
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('rm_messages_deduplicated_total')) total += Number(line.split(' ').pop()) || 0;
  }
  return total;
}

/** Starts the app again unless it runs: how every app fault restores. */
async function ensureRunning(context: FaultContext): Promise<void> {
  if (!context.app.process) await context.app.start();
}

/**
 * SIGKILL of the app under load, `kills` times at random moments 1 to 3 s apart, each followed by a restart.
 * Random moments mostly land while handlers run, before their commit. To land after the commit and before the
 * ack as well, the app is restarted between kills with its acknowledgements held back 200 ms
 * (`FAULT_ACK_DELAY_MS`), so every later kill catches a few dozen committed, unacknowledged deliveries; their
 * redeliveries must be skipped by the inbox (counted from the app's `/metrics`) and never applied twice.
 */
export function appKillFault(kills: number): Fault {
  return {
    name: 'app-kill',
    description: `SIGKILL of the app ${kills} times at random moments under load, later kills between commit and ack`,
    machineWide: false,
    async inject(context) {
      let skipped = 0;
      try {
        for (let kill = 1; kill <= kills; kill++) {
          await pause(between(1_000, 3_000), context.signal);
          skipped += await deduplicatedSoFar(context);
          await context.app.kill('SIGKILL');
          await context.app.start(kill < kills ? { [FAULT_ACK_DELAY_ENV]: String(ACK_DELAY_MS) } : {});
        }
        // The last kill's redeliveries reach the last app soon after it started.
        const deadline = Date.now() + 10_000;
        let last = 0;
        while (Date.now() < deadline && (last = await deduplicatedSoFar(context)) === 0) {
          await pause(500, context.signal);
        }
        skipped += last;
        context.note(
          `${kills} kills; ${skipped} redelivered message(s) already committed, skipped by the inbox`,
        );
      } finally {
        await ensureRunning(context);
      }
    },
  };
}

/**
 * SIGKILL of the app while its outbox relay holds a batch the broker has confirmed and the rows are not marked
 * published (the app's fault point, armed with SIGUSR2). The next relay publishes the rows again; consumers must
 * apply each message once.
 */
export function relayKillFault(): Fault {
  return {
    name: 'relay-kill',
    description: "SIGKILL of the app between the broker's confirm of an outbox batch and marking its rows",
    machineWide: false,
    async inject(context) {
      try {
        const app = context.app.process;
        if (!app) throw new Error('the app is not running');
        const stopped = app.waitForLine(new RegExp(RELAY_STOPPED_LINE), 30_000);
        app.kill(RELAY_STOP_SIGNAL);
        const line = await stopped;
        await context.app.kill('SIGKILL');
        await context.app.start();
        context.note(`killed at: ${/\((\d+) row/.exec(line)?.[1] ?? '?'} confirmed row(s) not marked`);
      } finally {
        await ensureRunning(context);
      }
    },
  };
}

/**
 * The messages of the order saga's flow, in its order, each handled by one step: the saga's on OrderPlaced, the
 * gateway's on RequestPayment, the saga's on PaymentCaptured, shipping's on OrderPaid, the saga's (and receipt's)
 * on OrderShipped.
 */
export const SAGA_FLOW_STEPS = [
  'order.placed',
  'payment.requested',
  'payment.captured',
  'order.paid',
  'order.shipped',
] as const;

/** One message of the order saga's flow. */
export type SagaFlowStep = (typeof SAGA_FLOW_STEPS)[number];

/**
 * SIGKILL of the app between each two steps of the order saga's flow (the full matrix; `--quick` kills after two
 * of them): for each of `steps` in turn, the app is started with the ack of the first committed delivery of that type held (`FAULT_HOLD_ACK_OF`), and killed
 * as soon as it holds it: the step's state change, its inbox row and the next step's message are committed, the
 * message is not acknowledged. The redelivered message must be skipped by the inbox, the next step must run once,
 * and every instance must reach its end: none lost, doubled or stuck.
 */
export function sagaStepKillFault(steps: readonly SagaFlowStep[] = SAGA_FLOW_STEPS): Fault {
  return {
    name: 'saga-step-kill',
    description: `SIGKILL of the app after each step of the order saga's flow commits, before its ack (${steps.join(', ')})`,
    machineWide: false,
    async inject(context) {
      const killed: string[] = [];
      try {
        for (const type of steps) {
          await context.app.kill('SIGKILL');
          await context.app.start({ [FAULT_HOLD_ACK_OF_ENV]: type });
          const app = context.app.process;
          if (!app) throw new Error('the app is not running');
          // The consumers start before HTTP listens: the line may be logged already. Read the lines kept, then
          // wait, in one turn, so no line falls between the two.
          const held = new RegExp(`${ACK_HELD_LINE} ${type.replace('.', '\\.')} `);
          if (!app.tail.some((line) => held.test(line))) await app.waitForLine(held, 60_000);
          await context.app.kill('SIGKILL');
          killed.push(type);
        }
        await context.app.start();
        context.note(`killed after the commit of each step, before its ack: ${killed.join(', ')}`);
      } finally {
        await ensureRunning(context);
      }
    },
  };
}

/** SIGTERM under load: the app drains and exits, and is started again. */
export function sigtermFault(): Fault {
  return {
    name: 'sigterm',
    description: 'SIGTERM of the app under load (graceful shutdown), then a restart',
    machineWide: false,
    async inject(context) {
      try {
        const started = Date.now();
        const exit = await context.app.kill('SIGTERM', 60_000);
        const clean = exit && (exit.code === 0 || exit.signal === 'SIGTERM');
        context.note(
          `${exit ? describeExit(exit) : 'not running'} after ${((Date.now() - started) / 1000).toFixed(1)} s` +
            (clean ? '' : ' (not a clean drain)'),
        );
        await context.app.start();
      } finally {
        await ensureRunning(context);
      }
    },
  };
}
