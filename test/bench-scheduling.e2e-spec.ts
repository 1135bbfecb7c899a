import { afterAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';

/** The compiled benchmark runner (`npm run bench`). */
const BENCH = 'dist/bench/run.js';

/**
 * The scheduling benchmark's quick form against the real broker and database, at small sizes: the scheduled write
 * against the outbox write, due messages timed to their arrival with rows not yet due in the table while the relay
 * carries traffic, and the promotion's plan at each size. No timing is asserted; the full sizes are
 * `BENCH_SUITES=scheduling npm run bench` (docs/benchmarks.md).
 */
describe('the scheduling benchmark, quick form (BENCH_SUITES=scheduling npm run bench)', () => {
  afterAll(() => ChildApp.killAll());

  it('prints the write and lateness lines, every due message arrived, and the promotion walks the delivery-time index', async () => {
    const bench = ChildApp.start(BENCH, {
      env: {
        BENCH_SUITES: 'scheduling',
        BENCH_ROUNDS: '1',
        BENCH_SCHEDULING_TRANSACTIONS: '200',
        BENCH_SCHEDULING_ROWS: '20000',
        BENCH_SCHEDULING_PROBES: '20',
        BENCH_NAME_PREFIX: process.env.BENCH_NAME_PREFIX ?? 'rm-e2e-bench-',
      },
    });

    const exit = await bench.waitForExit(240_000);

    expect({ exit, output: bench.lines.slice(-30) }).toMatchObject({ exit: { code: 0 } });
    expect(bench.stdout).toContainEqual(
      expect.stringMatching(/^scheduling: write scheduled\/outbox \d+\.\d\dx cpu \d+\.\d\dx$/),
    );
    expect(bench.stdout).toContainEqual(
      expect.stringMatching(/^scheduling: due p99 late \d+ ms with 20,000 scheduled \(empty table \d+ ms\)$/),
    );
    expect(bench.stdout).toContainEqual(
      expect.stringMatching(/ rows not yet due, 200 msgs\/s of traffic \| .*\(20 messages\) \|/),
    );
    expect(bench.stdout).toContainEqual(
      expect.stringMatching(
        /^\| the promotion with 20,000 rows not yet due \| [\d.]+ ms: Index Scan using rm_scheduled_deliver_at_idx on rm_scheduled;/,
      ),
    );
  }, 300_000);
});
