import { afterAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';

/** The compiled benchmark runner (`npm run bench`). */
const BENCH = 'dist/bench/run.js';
const WORKLOADS = ['low contention', 'high contention', 'hot instances'];

/**
 * The sagas benchmark's quick form against the real broker and database, at a small size: each workload's backlog
 * drained by the optimistic step and the key-ordered one, every instance checked for lost updates. No timing is
 * asserted; the full size is `BENCH_SUITES=sagas npm run bench` (docs/benchmarks.md).
 */
describe('the sagas benchmark, quick form (BENCH_SUITES=sagas npm run bench)', () => {
  afterAll(() => ChildApp.killAll());

  it('prints a comparison line and both rows for each workload, and neither mode lost an update', async () => {
    const bench = ChildApp.start(BENCH, {
      env: {
        BENCH_SUITES: 'sagas',
        BENCH_ROUNDS: '1',
        BENCH_SAGA_STEPS: '200',
        BENCH_SAGA_SLOTS: '4',
        BENCH_NAME_PREFIX: process.env.BENCH_NAME_PREFIX ?? 'rm-e2e-bench-',
      },
    });

    const exit = await bench.waitForExit(240_000);

    expect({ exit, output: bench.lines.slice(-30) }).toMatchObject({ exit: { code: 0 } });
    for (const workload of WORKLOADS) {
      expect(bench.stdout).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^sagas: ${workload} key-ordered/optimistic \\d+\\.\\d\\dx steps/s cpu \\d+\\.\\d\\dx ` +
              `p99 \\d+/\\d+ ms conflicts 0/\\d+ lost 0/0$`,
          ),
        ),
      );
      for (const mode of ['optimistic', 'key-ordered'])
        expect(bench.stdout).toContainEqual(
          expect.stringMatching(new RegExp(`^\\| ${workload}: .* \\| ${mode} \\| \\d+ \\| .* \\| 0 \\|$`)),
        );
    }
  }, 300_000);
});
