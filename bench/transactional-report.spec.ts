import { describe, expect, it } from '@jest/globals';
import type { Measurement } from './harness';
import {
  comparisonLine,
  formatTransactionalTable,
  ratios,
  targetsOf,
  type TransactionalCase,
} from './transactional-report';

/** A run of `messages` in `seconds` that spent `cpuMicrosPerMessage` µs of CPU on each. */
const run = (messages: number, seconds: number, cpuMicrosPerMessage: number): Measurement => ({
  messages,
  seconds,
  cpuMicros: messages * cpuMicrosPerMessage,
});

const CASE: TransactionalCase = {
  name: 'inbox-only',
  scenario: 'quorum queue',
  // Median 1000 msgs/s at 200 µs, p50 2 ms and p99 10 ms.
  handWritten: {
    runs: [run(1000, 1, 200), run(1000, 2, 300), run(1000, 0.5, 100)],
    latenciesMs: [...Array<number>(98).fill(2), 10, 10],
  },
  // Median 800 msgs/s at 300 µs, p50 3 ms and p99 12.5 ms.
  module: {
    runs: [run(800, 1, 300), run(800, 4, 400), run(800, 0.5, 250)],
    latenciesMs: [...Array<number>(98).fill(3), 12.5, 12.5],
  },
};

describe('the transactional suite report', () => {
  it('ratios are the module over the hand-written code: median throughput, median CPU per message, p50 and p99', () => {
    expect(ratios(CASE)).toEqual({ throughput: 0.8, cpu: 1.5, p50: 1.5, p99: 1.25 });
  });

  it('prints the comparison line in the form release checks read', () => {
    expect(comparisonLine(CASE)).toBe('transactional: inbox-only module/hand-written 0.80x cpu 1.50x');
  });

  it('the table marks each missed target by name, and a case meeting every target as met', () => {
    const met: TransactionalCase = { ...CASE, name: 'relay-no-keys', module: CASE.handWritten };
    const [, , missed, all] = formatTransactionalTable([CASE, met]).split('\n');
    expect(missed).toMatch(
      /^\| inbox-only: quorum queue \| 1000 \| 800 \| 0\.80x \| 200 \| 300 \| 1\.50x \| .* \| NO \(throughput, CPU\) \|$/,
    );
    expect(all).toMatch(/^\| relay-no-keys: quorum queue \| 1000 \| 1000 \| 1\.00x \| .* \| yes \|$/);
  });

  it('a case with targets of its own is judged by them, and its cell names them', () => {
    const own: TransactionalCase = { ...CASE, name: 'order-flow', targets: { throughput: 0.8 } };
    const missedCpu: TransactionalCase = { ...own, targets: { throughput: 0.8, cpu: 1.6 } };
    const [, , cpuMissed, met] = formatTransactionalTable([own, missedCpu]).split('\n');
    expect(cpuMissed).toMatch(/\| NO \(CPU; targets ≥ 0\.8x, CPU ≤ 1\.25x, p99 ≤ 1\.25x\) \|$/);
    expect(met).toMatch(/\| yes \(targets ≥ 0\.8x, CPU ≤ 1\.6x, p99 ≤ 1\.25x\) \|$/);
    expect(targetsOf(own)).toEqual({ throughput: 0.8, cpu: 1.25, p99: 1.25 });
  });
});
