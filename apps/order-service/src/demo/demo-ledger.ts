/** A dead letter a demo step planted on purpose, and why the app must refuse it. */
export interface ExpectedDeadLetter {
  /** The `message_id` the step published it with. */
  messageId: string;
  /** The dead-letter queue it must end in. */
  queue: string;
  /** The `rm-dead-letter-reason` it must carry. */
  reason: string;
  /** What was wrong with it, for the summary. */
  description: string;
}

/** What a check found: what it measured, for the summary, and a problem when its scenario did not hold. */
export interface DemoCheckResult {
  /** One line for the summary, e.g. `20 copies of 10 OrderPlaced skipped by the order saga's inbox`. */
  summary: string;
  /** Undefined when all is well. */
  problem?: string;
}

/** A check a step adds, run once the orders have settled. */
export interface DemoCheck {
  /** Short, shown beside its summary line, e.g. `duplicates`. */
  name: string;
  verify(): Promise<DemoCheckResult>;
}

/**
 * What the demo's steps did and what they expect at the end: the orders that must reach their final state,
 * the dead letters that must appear (and no others), and any further checks. A new scenario adds a step that
 * writes here; the summary needs no change.
 */
export class DemoLedger {
  /** Orders the app accepted (201), by id. */
  readonly orderIds: string[] = [];
  /** Orders the app refused or failed to take, with the reason. */
  readonly rejectedOrders: string[] = [];
  readonly expectedDeadLetters: ExpectedDeadLetter[] = [];
  readonly checks: DemoCheck[] = [];
}
