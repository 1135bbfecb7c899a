import { fork } from 'node:child_process';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { consumerApp, prepublish } from './consume.bench';
import { deleteByPrefix, rawConnection, startRun, uniquePrefix, type Suite } from './harness';

/** What the draining process tells the benchmark, over the IPC channel of `fork()`. */
export type DrainReport =
  | {
      kind: 'sample';
      drained: number;
      seconds: number;
      rssBytes: number;
      heapUsedBytes: number;
      /** The heap a full collection right after the sample left. */
      heapLiveBytes: number;
    }
  | { kind: 'done'; seconds: number };

/** What the benchmark tells the draining process, in its environment. */
export interface DrainSettings {
  exchange: string;
  queue: string;
  messages: number;
  prefetch: number;
  sampleEvery: number;
}

/** The variable the settings travel in. */
export const DRAIN_SETTINGS_VARIABLE = 'BENCH_MEMORY_DRAIN';

/** The backlog drained: `BENCH_MEMORY_MESSAGES`, else 200000. */
const BACKLOG = Number(process.env.BENCH_MEMORY_MESSAGES ?? 200_000);
/** The consumer's prefetch, and its handlers at once. */
const PREFETCH = 200;
/** Samples over the backlog: one every 5% of it (every 10,000 messages of 200,000). */
const SAMPLE_EVERY = Math.max(1, Math.ceil(BACKLOG / 20));
/** The share of the backlog taken as warm-up: the first sample at or past it is the reference. */
const WARM_UP_SHARE = 0.2;
/** How far RSS and heap may stray from their reference after the warm-up and still count as flat. */
const TOLERANCE = 0.2;
/** The draining process's entry point, beside this file in dist/. */
const DRAIN_SCRIPT = join(__dirname, 'memory-drain.js');

type Sample = Extract<DrainReport, { kind: 'sample' }>;

/** Runs the drain in a child process and resolves with its samples and how long the drain took. */
async function drainInChild(settings: DrainSettings): Promise<{ samples: Sample[]; seconds: number }> {
  const child = fork(DRAIN_SCRIPT, [], {
    env: { ...process.env, [DRAIN_SETTINGS_VARIABLE]: JSON.stringify(settings) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: ['--expose-gc'],
  });
  const samples: Sample[] = [];
  let seconds: number | undefined;
  child.on('message', (message: DrainReport) => {
    if (message.kind === 'sample') samples.push(message);
    else seconds = message.seconds;
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0 || seconds === undefined) {
    throw new Error(
      `the draining process exited with code ${code} after ${samples.at(-1)?.drained ?? 0} messages`,
    );
  }
  return { samples, seconds };
}

const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);

/** How far `values` stray from `reference`, as the lowest and highest ratio minus one. */
function spread(values: number[], reference: number): { low: number; high: number } {
  return {
    low: Math.min(...values.map((value) => value / reference - 1)),
    high: Math.max(...values.map((value) => value / reference - 1)),
  };
}

function percent(share: number): string {
  return `${share >= 0 ? '+' : '−'}${Math.abs(share * 100).toFixed(0)}%`;
}

/** The curve as a Markdown table, and after it whether RSS and heap stayed flat past the warm-up. */
function report(samples: Sample[], seconds: number): string {
  const warmUp = Math.ceil(BACKLOG * WARM_UP_SHARE);
  const after = samples.filter((sample) => sample.drained >= warmUp);
  const reference = after[0];
  const lines = [
    `| messages drained | s | RSS MiB | heap used MiB | heap live MiB (after a full GC) |`,
    `| ---: | ---: | ---: | ---: | ---: |`,
    ...samples.map(
      (sample) =>
        `| ${sample.drained}${sample === reference ? ' (reference)' : ''} | ${sample.seconds.toFixed(1)} | ` +
        `${mib(sample.rssBytes)} | ${mib(sample.heapUsedBytes)} | ${mib(sample.heapLiveBytes)} |`,
    ),
  ];
  if (!reference) return [...lines, '', 'memory: no sample after the warm-up'].join('\n');
  const verdicts = (
    [
      ['RSS', after.map((sample) => sample.rssBytes), reference.rssBytes],
      ['heap used', after.map((sample) => sample.heapUsedBytes), reference.heapUsedBytes],
      ['heap live', after.map((sample) => sample.heapLiveBytes), reference.heapLiveBytes],
    ] as const
  ).map(([name, values, base]) => {
    const { low, high } = spread([...values], base);
    const flat = Math.max(-low, high) <= TOLERANCE;
    return (
      `memory: ${name} after the warm-up (${warmUp} messages) stays within ${percent(low)} / ${percent(high)} ` +
      `of ${mib(base)} MiB: ${flat ? 'flat' : 'NOT flat'} within ±${TOLERANCE * 100}%`
    );
  });
  return [
    ...lines,
    '',
    `memory: ${BACKLOG} messages drained in ${seconds.toFixed(1)} s (${(BACKLOG / seconds).toFixed(0)} msgs/s), quorum queue, prefetch ${PREFETCH}`,
    ...verdicts,
  ].join('\n');
}

/**
 * The module's consumer draining a backlog (quorum queue, prefetch 200) in a process of its own, its RSS and heap
 * sampled every 5% of the backlog: after the warm-up they should stay flat, whatever the backlog's size.
 */
export const memorySuite: Suite = {
  name: 'memory',
  async run() {
    const prefix = uniquePrefix('memory');
    const exchange = `${prefix}.events`;
    const queue = `${prefix}.backlog`;
    const connection = await rawConnection(`${prefix}.raw`);
    console.log(`memory: queue ${queue}`);
    try {
      // A first boot declares the module's queue with its arguments (quorum, dead-lettering, delivery limit).
      const setup = await NestFactory.createApplicationContext(
        consumerApp(exchange, queue, 'quorum', {}, PREFETCH),
        { logger: ['error', 'warn'] },
      );
      await setup.close();
      const publishing = startRun(BACKLOG);
      await prepublish(connection, queue, BACKLOG);
      console.log(`memory: ${BACKLOG} messages pre-published in ${publishing().seconds.toFixed(1)} s`);
      const { samples, seconds } = await drainInChild({
        exchange,
        queue,
        messages: BACKLOG,
        prefetch: PREFETCH,
        sampleEvery: SAMPLE_EVERY,
      });
      return { comparisons: [], latencies: [], tables: [report(samples, seconds)] };
    } finally {
      await deleteByPrefix(connection, prefix, [queue, `${queue}.dlq`, exchange]);
      await connection.close();
    }
  },
};
