import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { callTree, type CpuProfile } from '../bench/flame-graph';
import { ChildApp } from './support/child-app';

/** The compiled benchmark runner (`npm run bench`). */
const BENCH = 'dist/bench/run.js';

const MESSAGES = 200;
const LATENCY_MESSAGES = 50;
/** The order-flow case's orders per throughput run, and per latency run (a quarter of a second's worth at 40/s). */
const ORDERS = 20;
const LATENCY_ORDERS = 10;

/** The suite's cases, in the order it runs them, and what each handles per run. */
const CASES: Array<[name: string, handled: number]> = [
  ['inbox-only', MESSAGES],
  ['consume-update-outbox', MESSAGES],
  ['relay-no-keys', MESSAGES],
  ['relay-100-keys', MESSAGES],
  ['order-flow', ORDERS],
];
const NAMES = CASES.map(([name]) => name);

/**
 * The transactional benchmark's quick form against the real broker and database: each case runs once through
 * the module and once through the hand-written code (bench/hand-written/), every message must be handled by
 * both (the suite counts the inbox and outbox rows, the queue's messages and the rows left pending, and fails
 * on any shortfall; in the order flow, every order's receipt, payment and history entries), and one comparison
 * line per case is printed. No timing is asserted. It runs with BENCH_PROFILE_DIR, so it also checks that each
 * measured run leaves a CPU profile a flame graph can be drawn from.
 */
describe('the transactional benchmark, quick form (BENCH_SUITES=transactional npm run bench)', () => {
  const profiles = mkdtempSync(join(tmpdir(), 'rm-bench-profiles-'));
  afterAll(async () => {
    await ChildApp.killAll();
    rmSync(profiles, { recursive: true, force: true });
  });

  it('handles every message through the module and the hand-written code in each case, prints the five comparison lines and profiles each run', async () => {
    const bench = ChildApp.start(BENCH, {
      env: {
        BENCH_PROFILE_DIR: profiles,
        BENCH_SUITES: 'transactional',
        BENCH_MESSAGES: String(MESSAGES),
        BENCH_ROUNDS: '1',
        BENCH_TX_LATENCY_MESSAGES: String(LATENCY_MESSAGES),
        BENCH_TX_ORDERS: String(ORDERS),
        BENCH_TX_LATENCY_ORDERS: String(LATENCY_ORDERS),
        BENCH_NAME_PREFIX: process.env.BENCH_NAME_PREFIX ?? 'rm-e2e-bench-',
      },
    });

    const exit = await bench.waitForExit(300_000);

    expect({ exit, output: bench.lines.slice(-40) }).toMatchObject({ exit: { code: 0 } });
    const handled = bench.stdout
      .map((line) =>
        /^transactional: ([\w-]+), round 1: (module|hand-written) handled (\d+) of (\d+) \(/.exec(line),
      )
      .filter((match) => match !== null)
      .map(([, name, who, count, of]) => ({ name, who, handled: Number(count), of: Number(of) }));
    expect(handled).toEqual(
      CASES.flatMap(([name, count]) => [
        { name, who: 'hand-written', handled: count, of: count },
        { name, who: 'module', handled: count, of: count },
      ]),
    );
    const comparisons = bench.stdout
      .map((line) =>
        /^transactional: ([\w-]+) module\/hand-written (\d+\.\d\d)x cpu (\d+\.\d\d)x$/.exec(line),
      )
      .filter((match) => match !== null)
      .map(([, name, throughput, cpu]) => ({ name, throughput: Number(throughput), cpu: Number(cpu) }));
    expect(comparisons.map((line) => line.name)).toEqual(NAMES);
    for (const line of comparisons) {
      expect(line.throughput).toBeGreaterThan(0);
      expect(line.cpu).toBeGreaterThan(0);
    }
    // The suite's table, then the same table under "All suites".
    const tableLines = bench.stdout.filter((line) => NAMES.some((name) => line.startsWith(`| ${name}: `)));
    expect(tableLines).toHaveLength(2 * NAMES.length);

    // One profile per measured throughput run of the in-process cases, and one per order-flow service process.
    const expected = [
      ...NAMES.slice(0, 4).flatMap((name) => [`${name}-hand-written-round1`, `${name}-module-round1`]),
      'order-flow-hand-written',
      'order-flow-module',
    ].map((name) => `${name}.cpuprofile`);
    expect(readdirSync(profiles).sort()).toEqual(expected.sort());
    for (const file of expected) {
      const tree = callTree(JSON.parse(readFileSync(join(profiles, file), 'utf8')) as CpuProfile);
      expect({ file, busy: tree.totalUs > 0 }).toEqual({ file, busy: true });
    }
  }, 360_000);
});
