/**
 * The ordering promise, checked on a recorded history. A history is every committed handling of a run's
 * messages, in handling order (`position`, a bigserial taken in the handler's own transaction). A message is a
 * key's sequence number `seq`, published 1, 2, 3, ... in that order through the outbox.
 *
 * For each key, in handling order, the promise is:
 * - the first committed handling of each sequence number comes after that of every lower one (strictly
 *   increasing), except a dead-lettered message replayed later, which arrives after the ones behind it;
 * - no sequence number is missing, except a dead-lettered one that was not replayed;
 * - no sequence number is committed twice (the inbox skips a redelivered or republished copy).
 *
 * The checker is a pure function of the rows and what the run expected, so hand-made histories test it.
 */

/** One committed handling, as the history table records it. */
export interface HandlingRow {
  /** The ordering key. */
  key: string;
  /** The message's place among its key's messages, from 1. */
  seq: number;
  /** The handler's attempt (1 for the first). */
  attempt: number;
  /** The replica (child process) that handled it. */
  replica: string;
  /** Its place in the handling order. */
  position: number;
  /** When the handler ran, in epoch milliseconds. */
  handledAt?: number;
}

/** What a run published and what it did to it. */
export interface HistoryExpectation {
  /** The keys published, each with sequence numbers 1..perKey. */
  keys: readonly string[];
  perKey: number;
  /** `key:seq` of the messages dead-lettered on purpose. */
  deadLettered?: ReadonlySet<string>;
  /** `key:seq` of the dead-lettered messages replayed afterwards: the only ones allowed out of order. */
  replayed?: ReadonlySet<string>;
}

/** The ways a history breaks the promise. */
export type ViolationKind =
  'out-of-order' | 'duplicate' | 'missing' | 'unexpected' | 'dead-letter-handled' | 'replay-not-after';

/** One break of the promise, with the key's history around it. */
export interface Violation {
  kind: ViolationKind;
  key: string;
  seq: number;
  /** The sequence numbers this key had first handled before it (the last few), in handling order. */
  before: number[];
  /** The offending handling; absent for a missing message. */
  attempt?: number;
  replica?: string;
  position?: number;
}

/** A replayed message and where it landed. */
export interface ReplayOutcome {
  key: string;
  seq: number;
  /** Whether it was handled, and after every other message of its key that was handled. */
  handledAfter: boolean;
  position?: number;
}

/** What the checker found. */
export interface HistoryReport {
  /** Handlings read. */
  handlings: number;
  /** Distinct messages handled. */
  messages: number;
  violations: Violation[];
  replays: ReplayOutcome[];
}

/** How many handled sequence numbers a violation quotes before it. */
const CONTEXT = 5;

const id = (key: string, seq: number): string => `${key}:${seq}`;

/** Checks `rows` (in any order) against the promise for `expected`. */
export function checkHistory(rows: readonly HandlingRow[], expected: HistoryExpectation): HistoryReport {
  const deadLettered = expected.deadLettered ?? new Set<string>();
  const replayed = expected.replayed ?? new Set<string>();
  const known = new Set(expected.keys);
  const byKey = new Map<string, HandlingRow[]>();
  for (const row of [...rows].sort((a, b) => a.position - b.position)) {
    const list = byKey.get(row.key) ?? [];
    list.push(row);
    byKey.set(row.key, list);
  }

  const violations: Violation[] = [];
  const replays: ReplayOutcome[] = [];
  let messages = 0;
  for (const key of [...new Set([...expected.keys, ...byKey.keys()])].sort()) {
    const history = byKey.get(key) ?? [];
    const firsts: number[] = [];
    const handled = new Map<number, HandlingRow>();
    let highest = 0;
    for (const row of history) {
      const at = { attempt: row.attempt, replica: row.replica, position: row.position };
      const before = firsts.slice(-CONTEXT);
      if (!known.has(key) || !Number.isInteger(row.seq) || row.seq < 1 || row.seq > expected.perKey) {
        violations.push({ kind: 'unexpected', key, seq: row.seq, before, ...at });
        continue;
      }
      if (handled.has(row.seq)) {
        violations.push({ kind: 'duplicate', key, seq: row.seq, before, ...at });
        continue;
      }
      handled.set(row.seq, row);
      const message = id(key, row.seq);
      if (deadLettered.has(message) && !replayed.has(message)) {
        violations.push({ kind: 'dead-letter-handled', key, seq: row.seq, before, ...at });
      } else if (!replayed.has(message)) {
        if (row.seq < highest) violations.push({ kind: 'out-of-order', key, seq: row.seq, before, ...at });
        highest = Math.max(highest, row.seq);
      }
      firsts.push(row.seq);
    }
    messages += handled.size;

    for (let seq = 1; seq <= (known.has(key) ? expected.perKey : 0); seq++) {
      const message = id(key, seq);
      const row = handled.get(seq);
      if (replayed.has(message)) {
        // Replayed after the rest of its key moved on: it lands after every later message of its key.
        const later = history.filter((other) => other.seq > seq && handled.get(other.seq) === other);
        const handledAfter = row !== undefined && later.every((other) => other.position < row.position);
        replays.push({ key, seq, handledAfter, position: row?.position });
        if (!handledAfter) {
          const before = row ? firsts.slice(0, firsts.indexOf(seq)).slice(-CONTEXT) : firsts.slice(-CONTEXT);
          violations.push({
            kind: row ? 'replay-not-after' : 'missing',
            key,
            seq,
            before,
            ...(row && { attempt: row.attempt, replica: row.replica, position: row.position }),
          });
        }
      } else if (!row && !deadLettered.has(message)) {
        const before = firsts.filter((other) => other < seq).slice(-CONTEXT);
        violations.push({ kind: 'missing', key, seq, before });
      }
    }
  }
  return { handlings: rows.length, messages, violations, replays };
}

/** One line per violation: the key, the sequence numbers before it, the offending one, its attempt and replica. */
export function describeViolation(violation: Violation): string {
  const where =
    violation.position === undefined
      ? ''
      : ` (attempt ${violation.attempt}, replica ${violation.replica}, position ${violation.position})`;
  return `${violation.kind}: key ${violation.key}: … ${violation.before.join(', ')} → ${violation.seq}${where}`;
}

/** The violations counted by kind. */
export function countByKind(violations: readonly Violation[]): Partial<Record<ViolationKind, number>> {
  const counts: Partial<Record<ViolationKind, number>> = {};
  for (const violation of violations) counts[violation.kind] = (counts[violation.kind] ?? 0) + 1;
  return counts;
}
