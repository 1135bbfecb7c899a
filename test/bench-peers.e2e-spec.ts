import { afterAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';

/** The compiled benchmark runner (`npm run bench`). */
const BENCH = 'dist/bench/run.js';

const MESSAGES = 300;

/** The contenders of the peers suite, in the order of its table. */
const CONTENDERS = [
  'raw amqplib',
  '@golevelup/nestjs-rabbitmq 9',
  'NestJS RMQ transport',
  'rascal',
  'this module (@Consume)',
];

/**
 * The peers benchmark's quick form against the real broker: each contender (each in a process of its own, the
 * golevelup one with its own dependencies, installed by the suite when missing) drains a quorum queue of a few
 * hundred of the module's messages at prefetch 20, and the table has a line for each. No timing is asserted.
 */
describe('the peers benchmark, quick form (BENCH_SUITES=peers npm run bench)', () => {
  afterAll(() => ChildApp.killAll());

  it('drains every message through each of the five consumers and prints a table line for each', async () => {
    const bench = ChildApp.start(BENCH, {
      env: {
        BENCH_SUITES: 'peers',
        BENCH_MESSAGES: String(MESSAGES),
        BENCH_ROUNDS: '1',
        BENCH_PEERS_PREFETCH: '20',
        BENCH_PEERS_QUEUES: 'quorum',
        BENCH_NAME_PREFIX: 'rm-e2e-bench-',
      },
    });

    const exit = await bench.waitForExit(300_000);

    expect({ exit, output: bench.lines.slice(-40) }).toMatchObject({ exit: { code: 0 } });
    const drained = bench.stdout
      .map((line) =>
        /^peers: quorum queue, prefetch 20, round 1: (.+) drained (\d+) of (\d+) messages in .* s, (\d+) left$/.exec(
          line,
        ),
      )
      .filter((match) => match !== null)
      .map(([, contender, handled, of, left]) => ({
        contender,
        handled: Number(handled),
        of: Number(of),
        left: Number(left),
      }));
    expect(drained.map((run) => run.contender).sort()).toEqual([...CONTENDERS].sort());
    for (const run of drained)
      expect(run).toEqual({ contender: run.contender, handled: MESSAGES, of: MESSAGES, left: 0 });
    // The suite's table, then the same table under "All suites".
    const tableLines = bench.stdout.filter((line) => line.startsWith('| quorum | 20 | '));
    expect(tableLines.map((line) => line.split('|')[3].trim())).toEqual([...CONTENDERS, ...CONTENDERS]);
    expect(bench.stdout).toContain('Targets (quorum queue, prefetch 200): not measured in this run.');
  }, 360_000);
});
