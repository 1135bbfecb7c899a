import { countMessages, readDeadLetters } from '../demo/dead-letter-reader';
import type { ExpectedDeadLetter } from '../demo/demo-ledger';
import { pause, type EnteredStage, type Fault, type FaultContext } from './fault';
import type { OrderLoad } from './order-load';
import { ORDER_SAGA } from '../fulfilment/order-saga';

/** One row of the fault table. */
export interface FaultRow {
  fault: string;
  /** Orders the app answered 2xx during the cycle. */
  accepted: number;
  /** Of those, paid, shipped and sent their receipt by the end. */
  settled: number;
  /** Orders with more than one row in the payments ledger. */
  paidTwice: number;
  /** Orders that got more than one receipt from the receipt service. */
  receiptsTwice: number;
  /** Accepted orders not settled within the settle timeout. */
  lost: number;
  /** Accepted orders whose saga instance had not completed by the end (never started, or waiting for a step). */
  sagasStuck: number;
  /**
   * Accepted orders whose status changes an ordered consumer (the history, by key; the activity feed, by queue)
   * did not handle in their order, or handled twice.
   */
  orderViolations: number;
  /** Dead letters that arrived during the cycle. */
  deadLettered: number;
  /** Dead letters nobody planted, and planted ones that never came, each described. */
  wrongDeadLetters: string[];
  /** From the fault's end until every order accepted before it had settled; undefined if that never happened. */
  recoveryMs?: number;
  /** Calls repeating a receipt key already sent (harmless: answered with the first receipt). */
  repeatedReceiptCalls: number;
  /** What the fault did and saw. */
  notes: string[];
  /** Problems the fault itself found (see FaultContext.fail). */
  problems: string[];
  /** The fault could not be injected or restored: the row proves nothing. */
  error?: string;
}

/**
 * Runs `fault`'s cycle, on its stage when it has one: entered first, left afterwards whatever happened. A stage
 * that does not come up gives a row that says so.
 */
export async function runFault(
  fault: Fault,
  context: Omit<FaultContext, 'expectDeadLetter' | 'note' | 'fail'>,
  load: OrderLoad,
  phases: CyclePhases,
): Promise<FaultRow> {
  let stage: EnteredStage | undefined;
  try {
    stage = await fault.stage?.enter(context);
  } catch (failure) {
    if (context.signal.aborted) throw failure;
    return unrunRow(fault, failure);
  }
  try {
    return await runFaultCycle(fault, { ...context, broker: stage?.broker ?? context.broker }, load, phases);
  } finally {
    await stage?.leave();
  }
}

/** The row of a fault that could not run at all (its stage did not come up): it proves nothing. */
function unrunRow(fault: Fault, failure: unknown): FaultRow {
  return {
    fault: fault.name,
    accepted: 0,
    settled: 0,
    paidTwice: 0,
    receiptsTwice: 0,
    lost: 0,
    sagasStuck: 0,
    orderViolations: 0,
    deadLettered: 0,
    wrongDeadLetters: [],
    repeatedReceiptCalls: 0,
    notes: [],
    problems: [],
    error: failure instanceof Error ? failure.message : String(failure),
  };
}

/** How long the phases of a cycle last. */
export interface CyclePhases {
  /** Load before the fault. */
  warmUpMs: number;
  /** Load after the fault's end. */
  afterMs: number;
  /** How long after the fault's end accepted orders may take to settle before they count as lost. */
  settleTimeoutMs: number;
}

const POLL_MS = 250;

/**
 * One cycle: steady load, the fault (which restores what it broke before it returns), a little more load, then
 * waiting until every order accepted in the cycle has settled and every planted dead letter has arrived, or the
 * settle timeout. Counts what the table shows, from the run's database, the receipt server and the dead-letter
 * queues (emptied afterwards, so each cycle sees its own).
 */
export async function runFaultCycle(
  fault: Fault,
  context: Omit<FaultContext, 'expectDeadLetter' | 'note' | 'fail'>,
  load: OrderLoad,
  phases: CyclePhases,
): Promise<FaultRow> {
  const expected: ExpectedDeadLetter[] = [];
  const notes: string[] = [];
  const problems: string[] = [];
  const faultContext: FaultContext = {
    ...context,
    expectDeadLetter: (deadLetter) => expected.push(deadLetter),
    note: (text) => notes.push(text),
    fail: (problem) => problems.push(problem),
  };
  const deadLetterQueues = context.environment.deadLetterQueues;
  const unexpectedExitsBefore = context.app.unexpectedExits.length;
  const repeatedBefore = context.receipts.stats.repeatedCalls;
  load.take();
  load.start();
  let error: string | undefined;
  let beforeEnd: string[];
  let faultEnd: number;
  try {
    await pause(phases.warmUpMs, context.signal);
    await fault.inject(faultContext).catch((failure: unknown) => {
      if (context.signal.aborted) throw failure;
      error = failure instanceof Error ? failure.message : String(failure);
    });
    faultEnd = Date.now();
    beforeEnd = load.take().accepted.map((order) => order.id);
  } catch (failure) {
    await load.stop();
    throw failure;
  }
  const accepted = [...beforeEnd];
  let recoveryMs: number | undefined;
  let loadDone = false;
  const afterLoad = pause(phases.afterMs, context.signal)
    .finally(() => load.stop())
    .then(() => {
      accepted.push(...load.take().accepted.map((order) => order.id));
      loadDone = true;
    });
  afterLoad.catch(() => undefined);
  const deadline = faultEnd + phases.settleTimeoutMs;
  while (Date.now() < deadline) {
    if (recoveryMs === undefined && (await unsettledOf(context, beforeEnd)) === 0) {
      recoveryMs = Date.now() - faultEnd;
    }
    if (loadDone) {
      const unsettled = await unsettledOf(context, accepted);
      const deadLetters = await context.broker
        .connection()
        .then((model) => countMessages(model, deadLetterQueues))
        .catch(() => -1);
      if (unsettled === 0 && recoveryMs !== undefined && deadLetters >= expected.length) break;
    }
    await pause(POLL_MS, context.signal);
  }
  await afterLoad;

  const model = await context.broker.connection();
  const seen = await readDeadLetters(model, deadLetterQueues);
  await context.broker.purge(deadLetterQueues);
  const wrongDeadLetters = [
    ...seen
      .filter(
        (letter) =>
          !expected.some(
            (e) => e.messageId === letter.messageId && e.queue === letter.queue && e.reason === letter.reason,
          ),
      )
      .map((letter) => `${letter.queue} ${letter.reason} ${letter.messageId ?? '?'}: ${letter.errorMessage}`),
    ...expected
      .filter((e) => !seen.some((letter) => letter.messageId === e.messageId && letter.queue === e.queue))
      .map((e) => `missing: ${e.description} in ${e.queue} as ${e.reason}`),
  ];
  const settled = accepted.length - (await settledCountable(context, accepted));
  const violations = await orderViolations(context, accepted);
  for (const violation of violations.slice(0, 5)) notes.push(`order violation: ${violation.description}`);
  // A crash is a failure even when nothing was lost: the supervisor's restart is what saved the messages.
  for (const exit of context.app.unexpectedExits.slice(unexpectedExitsBefore)) {
    problems.push(`the app crashed: ${exit.split('\n')[0]}`);
  }
  return {
    fault: fault.name,
    accepted: accepted.length,
    settled,
    paidTwice: await paidTwice(context, accepted),
    receiptsTwice: context.receipts.sentTwice(accepted),
    lost: accepted.length - settled,
    sagasStuck: await sagasStuck(context, accepted),
    orderViolations: violations.length,
    deadLettered: seen.length,
    wrongDeadLetters,
    recoveryMs,
    repeatedReceiptCalls: context.receipts.stats.repeatedCalls - repeatedBefore,
    notes,
    problems,
    error,
  };
}

/**
 * How many of `ids` are not yet paid, shipped, sent their receipt, recorded as placed and paid by both ordered
 * consumers and at the end of their saga; Infinity while the database is away.
 */
async function unsettledOf(context: Pick<FaultContext, 'database'>, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  try {
    const { rows } = await context.database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM orders o
        WHERE o.id = ANY($1::uuid[]) AND o.status = 'shipped' AND o.receipt_id IS NOT NULL
          AND (SELECT count(DISTINCT (h.recorder, h.sequence)) FROM order_history h WHERE h.order_id = o.id) = 4
          AND EXISTS (SELECT 1 FROM rm_saga s WHERE s.saga = $2 AND s.correlation_key = o.id::text
                        AND s.status = 'completed')`,
      [ids, ORDER_SAGA],
    );
    return ids.length - rows[0].n;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** {@link unsettledOf}, tried again for up to 30 s while the database does not answer. */
async function settledCountable(
  context: Pick<FaultContext, 'database' | 'signal'>,
  ids: readonly string[],
): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const unsettled = await unsettledOf(context, ids);
    if (Number.isFinite(unsettled) || Date.now() > deadline) return unsettled;
    await pause(POLL_MS, context.signal);
  }
}

/** How many of `ids` have no completed instance of the order saga. */
async function sagasStuck(context: Pick<FaultContext, 'database'>, ids: readonly string[]): Promise<number> {
  const { rows } = await context.database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM rm_saga WHERE saga = $2 AND correlation_key = ANY($1::text[])
        AND status = 'completed'`,
    [ids, ORDER_SAGA],
  );
  return ids.length - rows[0].n;
}

/** How many of `ids` have more than one charge in the payments ledger. */
async function paidTwice(context: Pick<FaultContext, 'database'>, ids: readonly string[]): Promise<number> {
  const { rows } = await context.database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (
       SELECT order_id FROM payments WHERE order_id = ANY($1::uuid[]) GROUP BY order_id HAVING count(*) > 1) twice`,
    [ids],
  );
  return rows[0].n;
}

/**
 * The accepted orders an ordered consumer handled out of order, one line each: per consumer and order, the
 * sequences of its status changes by the position they were recorded at must go up one by one, each once. A
 * change handled before an earlier one, or twice, breaks that.
 */
export async function orderViolations(
  context: Pick<FaultContext, 'database'>,
  ids: readonly string[],
): Promise<Array<{ recorder: string; description: string }>> {
  const { rows } = await context.database.query<{ recorder: string; order_id: string; sequences: number[] }>(
    `SELECT recorder, order_id, array_agg(sequence ORDER BY position) AS sequences FROM order_history
      WHERE order_id = ANY($1::uuid[]) GROUP BY recorder, order_id`,
    [ids],
  );
  return rows
    .filter((row) =>
      row.sequences.some((sequence, index) => index > 0 && sequence <= row.sequences[index - 1]),
    )
    .map((row) => ({
      recorder: row.recorder,
      description: `${row.recorder} handled order ${row.order_id}'s changes as ${row.sequences.join(', ')}`,
    }));
}
