import { performance } from 'node:perf_hooks';
import fc from 'fast-check';

/**
 * Generated cases per property: `FUZZ_RUNS` (`npm run fuzz` sets 100000), else a quick 1000 so the fuzz specs
 * run in the unit phase of `npm test` too.
 */
export const FUZZ_RUNS = positiveInteger(process.env.FUZZ_RUNS) ?? 1_000;

/** `FUZZ_SEED` replays a run that failed (fast-check prints the seed and path with the counterexample). */
const FUZZ_SEED = integer(process.env.FUZZ_SEED);

/**
 * A case slower than this is a hang to the fuzz: a parser of outside data answers in well under a millisecond,
 * so anything near this is work proportional to something the sender chose (a backtracking pattern, a quadratic
 * scan). Measured in CPU time of this process, so other processes on a busy machine do not count; a slow case is
 * timed twice more before it fails, so a garbage-collector pause alone does not count either.
 */
export const SLOW_CASE_MS = 50;

/** What one parser makes of one input: a result it accepted, or a refusal it documents. */
export type Outcome = { kind: 'accepted'; value: unknown } | { kind: 'refused'; reason: string };

/** A parser under fuzz: `run` feeds it one input and says how it answered; anything else it throws is a crash. */
export interface FuzzTarget<T> {
  /** How the report names the parser. */
  name: string;
  /** Runs the parser on one input. Throws only for a crash: an undocumented error, a malformed result. */
  run: (input: T) => Outcome | Promise<Outcome>;
}

/** What one fuzz run saw, printed per parser. */
export interface FuzzReport {
  name: string;
  cases: number;
  accepted: number;
  refused: number;
  maxCaseMs: number;
  /** The slowest input, as fast-check prints it, cut short. */
  slowest: string;
  wallMs: number;
}

/** A crash found by the fuzz: the parser threw something that is not its documented refusal, or broke an invariant. */
export class FuzzCrash extends Error {
  override readonly name = 'FuzzCrash';
}

/**
 * Checks the invariants every parser of outside data keeps, for `runs` generated inputs and then every input
 * of `corpus`: it either accepts or refuses with a reason (`target.run` throws otherwise), within
 * {@link SLOW_CASE_MS}, and leaves `Object.prototype` and `Array.prototype` as it found them. Returns what it saw;
 * the first broken case fails it, shrunk by fast-check to a small input.
 */
export async function fuzz<T>(
  target: FuzzTarget<T>,
  arbitrary: fc.Arbitrary<T>,
  corpus: readonly T[] = [],
  runs: number = FUZZ_RUNS,
): Promise<FuzzReport> {
  const report: FuzzReport = {
    name: target.name,
    cases: 0,
    accepted: 0,
    refused: 0,
    maxCaseMs: 0,
    slowest: '',
    wallMs: 0,
  };
  const started = performance.now();
  const check = async (input: T): Promise<void> => {
    const outcome = await timed(target, input, report);
    report.cases += 1;
    if (outcome.kind === 'accepted') report.accepted += 1;
    else report.refused += 1;
    assertNoPollution(target.name);
  };
  for (const input of corpus) await check(input);
  await fc.assert(fc.asyncProperty(arbitrary, check), {
    numRuns: runs,
    ...(FUZZ_SEED === undefined ? {} : { seed: FUZZ_SEED }),
  });
  report.wallMs = performance.now() - started;
  printReport(report);
  return report;
}

/** Runs one case; a case past SLOW_CASE_MS is run again, and fails only when it is slow three times. */
async function timed<T>(target: FuzzTarget<T>, input: T, report: FuzzReport): Promise<Outcome> {
  let fastest = Number.POSITIVE_INFINITY;
  let outcome: Outcome | undefined;
  for (let attempt = 0; attempt < 3 && fastest > SLOW_CASE_MS; attempt += 1) {
    const start = process.cpuUsage();
    outcome = await target.run(input);
    const used = process.cpuUsage(start);
    fastest = Math.min(fastest, (used.user + used.system) / 1000);
  }
  if (fastest > report.maxCaseMs) {
    report.maxCaseMs = fastest;
    report.slowest = fc.stringify(input).slice(0, 80);
  }
  if (fastest > SLOW_CASE_MS) {
    throw new FuzzCrash(
      `${target.name} took ${fastest.toFixed(1)} ms on one input (limit ${SLOW_CASE_MS} ms): ${fc.stringify(input).slice(0, 200)}`,
    );
  }
  if (outcome?.kind === 'refused' && outcome.reason.trim() === '') {
    throw new FuzzCrash(`${target.name} refused an input without a reason`);
  }
  return outcome as Outcome;
}

const OBJECT_MEMBERS = Object.getOwnPropertyNames(Object.prototype).length;
const ARRAY_MEMBERS = Object.getOwnPropertyNames(Array.prototype).length;

/** Fails when a case added a member to a prototype every object shares (`__proto__` pollution and the like). */
function assertNoPollution(name: string): void {
  const probe = {} as Record<string, unknown>;
  if (
    Object.getOwnPropertyNames(Object.prototype).length !== OBJECT_MEMBERS ||
    Object.getOwnPropertyNames(Array.prototype).length !== ARRAY_MEMBERS ||
    probe.polluted !== undefined ||
    Object.getPrototypeOf(probe) !== Object.prototype
  ) {
    throw new FuzzCrash(`${name} polluted a shared prototype`);
  }
}

/**
 * The outcome of a call that refuses by throwing: accepted with its result, refused when it threw an instance
 * of `refusal` with a message (and its own check of that error passes), a crash otherwise, with what was thrown.
 */
export function refusedBy<E extends Error>(
  refusal: abstract new (...args: never[]) => E,
  call: () => unknown,
  check: (error: E) => string | undefined = (error) => error.message,
): Outcome {
  try {
    return { kind: 'accepted', value: call() };
  } catch (error) {
    return refusalOf(refusal, error, check);
  }
}

/** As refusedBy, for a call that answers with a promise. */
export async function refusedByAsync<E extends Error>(
  refusal: abstract new (...args: never[]) => E,
  call: () => Promise<unknown>,
  check: (error: E) => string | undefined = (error) => error.message,
): Promise<Outcome> {
  try {
    return { kind: 'accepted', value: await call() };
  } catch (error) {
    return refusalOf(refusal, error, check);
  }
}

function refusalOf<E extends Error>(
  refusal: abstract new (...args: never[]) => E,
  error: unknown,
  check: (error: E) => string | undefined,
): Outcome {
  if (!(error instanceof refusal)) {
    const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new FuzzCrash(`threw ${what.slice(0, 300)} instead of a ${refusal.name}`, { cause: error });
  }
  const reason = check(error);
  if (!reason) throw new FuzzCrash(`a ${refusal.name} without a reason: ${error.message.slice(0, 300)}`);
  return { kind: 'refused', reason };
}

/** Fails the case unless `condition` holds; says what was wrong with an accepted result. */
export function expectWellFormed(condition: boolean, problem: string): void {
  if (!condition) throw new FuzzCrash(problem);
}

function printReport(report: FuzzReport): void {
  const line =
    `fuzz ${report.name}: ${report.cases} cases (${report.accepted} accepted, ${report.refused} refused), ` +
    `max case ${report.maxCaseMs.toFixed(2)} ms CPU (${report.slowest}), ${(report.wallMs / 1000).toFixed(1)} s`;
  process.stdout.write(`${line}\n`);
}

function positiveInteger(text: string | undefined): number | undefined {
  const value = integer(text);
  return value !== undefined && value > 0 ? value : undefined;
}

function integer(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** Jest's timeout for one fuzz property: a minute, or 5 ms per case for long runs. */
export const FUZZ_TIMEOUT_MS = Math.max(60_000, FUZZ_RUNS * 5);
