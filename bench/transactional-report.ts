import { medianCpuPerMessage, medianRate, percentile, type Measurement } from './harness';

/** The issue's targets for each case, as ratios of the module to the hand-written code of the same run. */
export const TRANSACTIONAL_TARGETS = { throughput: 0.9, cpu: 1.25, p99: 1.25 };

/** One case of the transactional suite: both implementations' runs and latency samples (ms). */
export interface TransactionalCase {
  name: string;
  /** What the case does, for the table. */
  scenario: string;
  handWritten: { runs: Measurement[]; latenciesMs: number[] };
  module: { runs: Measurement[]; latenciesMs: number[] };
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

/** Every case as a Markdown table: throughput, CPU per message and latency of both, the ratios, the targets met. */
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
    const missed = [
      r.throughput < throughput ? 'throughput' : '',
      r.cpu > cpu ? 'CPU' : '',
      r.p99 > p99 ? 'p99' : '',
    ].filter(Boolean);
    lines.push(
      `| ${entry.name}: ${entry.scenario} | ${Math.round(medianRate(entry.handWritten.runs))} | ` +
        `${Math.round(medianRate(entry.module.runs))} | ${r.throughput.toFixed(2)}x | ` +
        `${Math.round(medianCpuPerMessage(entry.handWritten.runs))} | ${Math.round(medianCpuPerMessage(entry.module.runs))} | ` +
        `${r.cpu.toFixed(2)}x | ${ms(entry.handWritten.latenciesMs, 50)} | ${ms(entry.module.latenciesMs, 50)} | ` +
        `${ms(entry.handWritten.latenciesMs, 99)} | ${ms(entry.module.latenciesMs, 99)} | ${r.p99.toFixed(2)}x | ` +
        `${missed.length === 0 ? 'yes' : `NO (${missed.join(', ')})`} |`,
    );
  }
  return lines.join('\n');
}

function ms(samples: readonly number[], p: number): string {
  return percentile(samples, p).toFixed(1);
}
