import { medianCpuPerMessage, medianRate, percentile, type Measurement } from './harness';

/** The issue's targets for each case, as ratios of the module to the hand-written code of the same run. */
export const TRANSACTIONAL_TARGETS = { throughput: 0.9, cpu: 1.25, p99: 1.25 };

/** Targets as ratios of the module to the hand-written code: throughput at least, CPU and p99 at most. */
export type TransactionalTargets = typeof TRANSACTIONAL_TARGETS;

/**
 * One case of the transactional suite: both implementations' runs and latency samples (ms). A run's messages are
 * whatever the case counts (messages, or orders end to end), and its CPU is whichever process did the work (the
 * benchmark's, or a service's of its own); the scenario says which.
 */
export interface TransactionalCase {
  name: string;
  /** What the case does, for the table. */
  scenario: string;
  /** Targets of this case where they differ from TRANSACTIONAL_TARGETS. */
  targets?: Partial<TransactionalTargets>;
  handWritten: { runs: Measurement[]; latenciesMs: number[] };
  module: { runs: Measurement[]; latenciesMs: number[] };
}

/** The case's targets: its own where it sets them, the suite's otherwise. */
export function targetsOf(entry: TransactionalCase): TransactionalTargets {
  return { ...TRANSACTIONAL_TARGETS, ...entry.targets };
}

/** The module's figures over the hand-written code's: median throughput, median CPU per message, p50 and p99. */
export function ratios(entry: TransactionalCase): {
  throughput: number;
  cpu: number;
  p50: number;
  p99: number;
} {
  const { handWritten, module } = entry;
  return {
    throughput: medianRate(module.runs) / medianRate(handWritten.runs),
    cpu: medianCpuPerMessage(module.runs) / medianCpuPerMessage(handWritten.runs),
    p50: percentile(module.latenciesMs, 50) / percentile(handWritten.latenciesMs, 50),
    p99: percentile(module.latenciesMs, 99) / percentile(handWritten.latenciesMs, 99),
  };
}

/** The comparison line release checks read: `transactional: <case> module/hand-written <ratio>x cpu <ratio>x`. */
export function comparisonLine(entry: TransactionalCase): string {
  const { throughput, cpu } = ratios(entry);
  return `transactional: ${entry.name} module/hand-written ${throughput.toFixed(2)}x cpu ${cpu.toFixed(2)}x`;
}

/**
 * Every case as a Markdown table: throughput, CPU per message and latency of both, the ratios, the targets met (a
 * case with targets of its own names them in that cell).
 */
export function formatTransactionalTable(cases: readonly TransactionalCase[]): string {
  const { throughput, cpu, p99 } = TRANSACTIONAL_TARGETS;
  const lines = [
    '| case | hand-written msgs/s | module msgs/s | ratio | CPU µs/msg hand-written | CPU µs/msg module | CPU ratio | ' +
      'p50 ms hand-written | p50 ms module | p99 ms hand-written | p99 ms module | p99 ratio | ' +
      `met (≥ ${throughput}x, CPU ≤ ${cpu}x, p99 ≤ ${p99}x) |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const entry of cases) {
    const r = ratios(entry);
    const targets = targetsOf(entry);
    const missed = [
      r.throughput < targets.throughput ? 'throughput' : '',
      r.cpu > targets.cpu ? 'CPU' : '',
      r.p99 > targets.p99 ? 'p99' : '',
    ].filter(Boolean);
    const own = entry.targets
      ? `; targets ≥ ${targets.throughput}x, CPU ≤ ${targets.cpu}x, p99 ≤ ${targets.p99}x`
      : '';
    lines.push(
      `| ${entry.name}: ${entry.scenario} | ${Math.round(medianRate(entry.handWritten.runs))} | ` +
        `${Math.round(medianRate(entry.module.runs))} | ${r.throughput.toFixed(2)}x | ` +
        `${Math.round(medianCpuPerMessage(entry.handWritten.runs))} | ${Math.round(medianCpuPerMessage(entry.module.runs))} | ` +
        `${r.cpu.toFixed(2)}x | ${ms(entry.handWritten.latenciesMs, 50)} | ${ms(entry.module.latenciesMs, 50)} | ` +
        `${ms(entry.handWritten.latenciesMs, 99)} | ${ms(entry.module.latenciesMs, 99)} | ${r.p99.toFixed(2)}x | ` +
        `${missed.length === 0 ? (own ? `yes (${own.slice(2)})` : 'yes') : `NO (${missed.join(', ')}${own})`} |`,
    );
  }
  return lines.join('\n');
}

/**
 * Says what a run did (the quick form's test reads these lines) and fails the suite when an implementation
 * handled fewer messages, or wrote fewer rows, than it was given.
 */
export function report(line: {
  name: string;
  round: number;
  who: string;
  handled: number;
  of: number;
  rows: string;
  ok: boolean;
}): void {
  console.log(
    `transactional: ${line.name}, round ${line.round}: ${line.who} handled ${line.handled} of ${line.of} (${line.rows})`,
  );
  if (!line.ok || line.handled !== line.of) {
    throw new Error(
      `transactional: ${line.name}: ${line.who} handled ${line.handled} of ${line.of} (${line.rows})`,
    );
  }
}

function ms(samples: readonly number[], p: number): string {
  return percentile(samples, p).toFixed(1);
}
