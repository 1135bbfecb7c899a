import { afterAll, describe, expect, it } from '@jest/globals';
import { ChildApp } from './support/child-app';
import { brokerObjectsUnder, databaseExists } from './support/leftovers';

/** The compiled benchmark runner (`npm run bench`); ORDER_SERVICE_DIST names another build output than dist/. */
const BENCH = `${process.env.ORDER_SERVICE_DIST ?? 'dist'}/bench/run.js`;

describe('the orders and memory benchmarks (npm run bench), in a quick form', () => {
  afterAll(async () => {
    await ChildApp.killAll();
  });

  it('gives each of 50 orders its receipt, prints the memory curve of a 2000-message backlog, exits 0 and leaves nothing behind', async () => {
    const bench = ChildApp.start(BENCH, {
      env: {
        BENCH_SUITES: 'orders,memory',
        BENCH_ORDERS: '50',
        BENCH_ORDERS_LATENCY_SECONDS: '2',
        BENCH_ORDERS_CEILING_SECONDS: '1',
        BENCH_MEMORY_MESSAGES: '2000',
      },
    });

    const exit = await bench.waitForExit(240_000);

    expect({ exit, output: bench.lines.slice(-40) }).toMatchObject({ exit: { code: 0 } });
    expect(bench.stdout).toContain(
      'orders: 50/50 orders got their receipt (throughput run, 30 POSTs in flight)',
    );
    const latencyRun = bench.stdout.find((line) => line.includes('(latency run,'));
    const [, received, sent] = /^orders: (\d+)\/(\d+) orders got their receipt/.exec(latencyRun ?? '') ?? [];
    expect(Number(sent)).toBeGreaterThan(0);
    expect(received).toBe(sent);
    expect(bench.stdout).toContainEqual(
      expect.stringMatching(
        /^\| the database's bound: mean ceiling ÷ commits per order \| \d+ orders\/s \|$/,
      ),
    );

    // The curve: a sample at the first delivery and one every 100 messages (5% of the backlog), in one table.
    const header = bench.stdout.indexOf(
      '| messages drained | s | RSS MiB | heap used MiB | heap live MiB (after a full GC) |',
    );
    expect(header).toBeGreaterThanOrEqual(0);
    const rows = bench.stdout.slice(header + 2, header + 23);
    expect(rows.map((row) => Number(/^\| (\d+)/.exec(row)?.[1]))).toEqual(
      Array.from({ length: 21 }, (_, n) => n * 100),
    );
    for (const row of rows)
      expect(row).toMatch(/^\| \d+( \(reference\))? \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$/);
    for (const measure of ['RSS', 'heap used', 'heap live']) {
      expect(bench.stdout).toContainEqual(
        expect.stringMatching(
          new RegExp(`^memory: ${measure} after the warm-up \\(400 messages\\) stays within `),
        ),
      );
    }

    const output = bench.stdout.join('\n');
    const database = /^orders: database (rm_bench_[0-9a-f]+), namespace (rm-bench-orders-[0-9a-f]+)$/m.exec(
      output,
    );
    const memoryQueue = /^memory: queue (rm-bench-memory-[0-9a-f]+)\.backlog$/m.exec(output);
    expect(database).not.toBeNull();
    expect(memoryQueue).not.toBeNull();
    expect(await databaseExists(database?.[1] ?? '')).toBe(false);
    expect(brokerObjectsUnder(database?.[2] ?? '')).toEqual([]);
    expect(brokerObjectsUnder(memoryQueue?.[1] ?? '')).toEqual([]);
  }, 300_000);
});
