import { afterAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';

/** The compiled benchmark runner (`npm run bench`). */
const BENCH = 'dist/bench/run.js';

/** The suite's cases, in the order it runs them. */
const CASES = [
  'inbox-growth',
  'prune-under-load',
  'outbox-backlog',
  'many-consumers',
  'dead-letters',
  'claim-check',
];

/**
 * The scale benchmark's quick form against the real broker and database, at small sizes: the inbox case drains
 * through a filled inbox and an empty one, the outbox case relays a backlog of ten times the small one while rows
 * are committed behind it, the prune case deletes its expired inbox rows while messages are handled, and the
 * suite prints one line per case, the claim's plan on the large backlog, each row committed during the drain
 * timed to its arrival, the prune's rows as its metric counted them, and each many-consumers process's start-up,
 * memory, channels and CPU a message, each operator tool's reading of 300 dead letters against 100 (`dlq list` as
 * a process with its peak RSS, the API list, the console overview) against the pod's memory limit, and the
 * claim-check prune of its expired, unreferred bodies while claim-checked messages are published (the previous
 * statement's prune, then the module's, each on the store written afresh). No timing is asserted; the full sizes are
 * `BENCH_SUITES=scale npm run bench` (docs/benchmarks.md).
 */
describe('the scale benchmark, quick form (BENCH_SUITES=scale npm run bench)', () => {
  afterAll(() => ChildApp.killAll());

  it('runs each case against its small form and prints its line, the claim plan, the waits of rows committed during a drain and the prune counted', async () => {
    const bench = ChildApp.start(BENCH, {
      env: {
        BENCH_SUITES: 'scale',
        BENCH_MESSAGES: '300',
        BENCH_ROUNDS: '1',
        BENCH_SCALE_INBOX_ROWS: '30000',
        BENCH_SCALE_OUTBOX_ROWS: '6000',
        BENCH_SCALE_OUTBOX_SMALL_ROWS: '600',
        BENCH_SCALE_PROBE_RATE: '20',
        BENCH_SCALE_PRUNE_ROWS: '20000',
        BENCH_SCALE_QUIET_MESSAGES: '100',
        BENCH_SCALE_CONSUMERS: '2,6',
        BENCH_SCALE_DEAD_LETTERS: '300',
        BENCH_SCALE_CLAIM_CHECK_BODIES: '3000',
        BENCH_SCALE_CLAIM_CHECK_DEAD_LETTERS: '100',
        BENCH_SCALE_CLAIM_CHECK_MESSAGES: '200',
        BENCH_NAME_PREFIX: process.env.BENCH_NAME_PREFIX ?? 'rm-e2e-bench-',
      },
    });

    const exit = await bench.waitForExit(240_000);

    expect({ exit, output: bench.lines.slice(-40) }).toMatchObject({ exit: { code: 0 } });
    const lines = bench.stdout
      .map((line) => /^scale: ([\w-]+) large\/small (\d+\.\d\d)x$/.exec(line))
      .filter((match) => match !== null)
      .map(([, name, ratio]) => ({ name, ratio: Number(ratio) }));
    expect(lines.map((line) => line.name)).toEqual(CASES);
    for (const line of lines) expect(line.ratio).toBeGreaterThan(0);
    const fact = (what: string): string | undefined =>
      bench.stdout.find((line) => line.startsWith(`| outbox-backlog | ${what} |`));
    expect(fact('the claim on the large backlog (generic plan)')).toMatch(
      /index scan in id order: .*Index Scan using rm_outbox_pending_idx on rm_outbox o/,
    );
    expect(fact('a row committed during the large drain, to its arrival')).toMatch(
      /^\| .* \| [1-9]\d* rows: p50 /,
    );
    expect(bench.stdout.find((line) => line.startsWith('| inbox-growth | the dedup insert'))).toMatch(
      /Conflict Resolution: NOTHING/,
    );
    // Each process's start-up, memory, broker channels (one per consumer, and the publisher's) and CPU a message.
    for (const count of [2, 6]) {
      expect(bench.stdout.find((line) => line.startsWith(`| many-consumers | ${count} consumers |`))).toMatch(
        new RegExp(
          `start .* first, .* after; RSS \\d+ MiB, heap \\d+ MiB; 2 connections, ${count + 1} channels; \\d+ µs CPU a message`,
        ),
      );
    }
    // Every expired row pruned, and counted by the pruning app's metric.
    expect(bench.stdout.find((line) => line.startsWith('| prune-under-load | the prune |'))).toMatch(
      /\| 20,000 rows in .* rm_pruned_rows_total\{kind="inbox"\} 20000 \|$/,
    );
    // Each tool read 100 of the 300 dead letters, and each process's memory is set against the pod's limit.
    const deadLetters = (what: string): string | undefined =>
      bench.stdout.find((line) => line.startsWith(`| dead-letters | ${what}`));
    expect(deadLetters('`dlq list --limit 100`')).toMatch(
      /100: \d+ ms, peak RSS \d+ MiB, 100 read, 100 listed; 300: \d+ ms, peak RSS \d+ MiB, 100 read, 100 listed \|$/,
    );
    expect(deadLetters('API')).toMatch(
      /100: \d+ ms, 100 read; server RSS .*; 300: \d+ ms, 100 read; server RSS /,
    );
    expect(deadLetters('console overview')).toMatch(/100: \d+ ms, .*; 300: \d+ ms, /);
    expect(deadLetters('RSS against the pod limit (512 MiB')).toMatch(/highest peak \d+ MiB, \d+% of it/);
    // The expired bodies no dead letter refers to pruned, counted by the metric; the 100 referred to kept: by the
    // module's prune, and by the previous statement the case measures beside it, on the store written again.
    for (const prune of ['the prune', 'before: the prune (the kept ids sent with every batch)']) {
      expect(bench.stdout.find((line) => line.startsWith(`| claim-check | ${prune} |`))).toMatch(
        /\| 2,600 bodies in .* rm_pruned_rows_total\{kind="claim_check"\} 2600; 100 of the 100 referred bodies kept \|$/,
      );
    }
  }, 300_000);
});
