import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { promisify } from 'node:util';
import * as amqp from 'amqplib';

const run = promisify(execFile);

/** The broker the benchmarks use: `AMQP_URL`, else the local default. */
export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** Messages per measured run: `BENCH_MESSAGES`, else 20000. */
export const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20_000);

/** Measured runs per subject; the median is reported. `BENCH_ROUNDS`, else 3. */
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** One timed run: how many messages went through in how long. */
export interface Measurement {
  messages: number;
  seconds: number;
  /** CPU time this process spent during the run (user + system), in microseconds. */
  cpuMicros: number;
}

/** Starts timing a run; the returned function ends it and gives its Measurement. */
export function startRun(messages: number): () => Measurement {
  const cpu = process.cpuUsage();
  const started = performance.now();
  return () => {
    const used = process.cpuUsage(cpu);
    return { messages, seconds: (performance.now() - started) / 1000, cpuMicros: used.user + used.system };
  };
}

/**
 * Counts deliveries; the run is timed from the first delivery to the last one finished. `finished` rejects
 * when the run fails.
 */
export class Progress {
  count = 0;
  result?: Measurement;
  readonly finished: Promise<void>;
  private done!: () => void;
  private failed!: (error: unknown) => void;
  private end?: () => Measurement;

  constructor(private readonly expected: number) {
    this.finished = new Promise((resolve, reject) => {
      this.done = resolve;
      this.failed = reject;
    });
  }

  started(): void {
    this.end ??= startRun(this.expected);
  }

  completed(): void {
    if (++this.count === this.expected) {
      this.result = this.end?.();
      this.done();
    }
  }

  /** Ends the run with `error`, which `finished` rejects with. */
  fail(error: unknown): void {
    this.failed(error);
  }

  measurement(): Measurement {
    if (!this.result) throw new Error('the run has not finished');
    return this.result;
  }
}

/** The median CPU time per message of several runs, in microseconds. */
export function medianCpuPerMessage(measurements: Measurement[]): number {
  const values = measurements.map((m) => m.cpuMicros / m.messages).sort((a, b) => a - b);
  const middle = Math.floor(values.length / 2);
  return values.length % 2 === 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

/**
 * One line of the results: the module (`candidate`) against its same-run baseline (raw amqplib, or whatever the
 * suite compares with), and the ratio the module must reach.
 */
export interface Comparison {
  suite: string;
  scenario: string;
  baseline: Measurement[];
  candidate: Measurement[];
  /** The lowest acceptable candidate/baseline throughput ratio; 0 when only `minRate` (or nothing) is required. */
  target: number;
  /** The lowest acceptable module msgs/s, when the target is absolute. Default: none. */
  minRate?: number;
  /** The most CPU time the module may spend per message (median), in microseconds. Default: none. */
  maxCpuMicros?: number;
}

/**
 * Latencies of the module against its same-run baseline, one sample per message in milliseconds, and the
 * percentiles the module must reach.
 */
export interface LatencyComparison {
  suite: string;
  scenario: string;
  baselineMs: number[];
  candidateMs: number[];
  targets: { p50Ms: number; p99Ms: number };
}

/** What a suite measured: throughput comparisons, latency comparisons, and tables of its own when it has any. */
export interface SuiteResults {
  comparisons: Comparison[];
  latencies: LatencyComparison[];
  /** Markdown tables (with any lines under them) that fit neither shape, printed as they are. Default: none. */
  tables?: string[];
}

/** A benchmark suite: it sets up, measures its comparisons, and cleans up after itself. */
export interface Suite {
  name: string;
  run(): Promise<Comparison[] | SuiteResults>;
}

/** Messages per second of a run. */
export function rate(measurement: Measurement): number {
  return measurement.messages / measurement.seconds;
}

/** The median messages per second of several runs. */
export function medianRate(measurements: Measurement[]): number {
  const rates = measurements.map(rate).sort((a, b) => a - b);
  const middle = Math.floor(rates.length / 2);
  return rates.length % 2 === 1 ? rates[middle] : (rates[middle - 1] + rates[middle]) / 2;
}

/**
 * Runs `baseline` and `candidate` alternately, `rounds` times each, so that drift of the machine (other processes,
 * the broker's own housekeeping) weighs on both alike.
 */
export async function alternate(
  rounds: number,
  baseline: () => Promise<Measurement>,
  candidate: () => Promise<Measurement>,
): Promise<{ baseline: Measurement[]; candidate: Measurement[] }> {
  const result = { baseline: [] as Measurement[], candidate: [] as Measurement[] };
  for (let round = 0; round < rounds; round++) {
    result.baseline.push(await baseline());
    result.candidate.push(await candidate());
  }
  return result;
}

/**
 * A name prefix unique to this run, so benchmarks never touch other queues and exchanges: `BENCH_NAME_PREFIX`
 * (default `rm-bench-`), the suite's name and a random part. A test running a suite sets `rm-e2e-…`, which the
 * test sweep deletes should the suite be killed before it cleans up.
 */
export function uniquePrefix(suite: string): string {
  return `${process.env.BENCH_NAME_PREFIX ?? 'rm-bench-'}${suite}-${randomBytes(3).toString('hex')}`;
}

/** Opens a raw amqplib connection whose 'error' events are logged, not thrown. */
export async function rawConnection(name: string): Promise<amqp.ChannelModel> {
  const connection = await amqp.connect(AMQP_URL, { clientProperties: { connection_name: name } });
  connection.on('error', (error: Error) => console.error(`raw connection error: ${error.message}`));
  return connection;
}

/**
 * Deletes every queue and exchange whose name starts with `prefix`: the ones a suite declared and the ones the
 * module declared for it (dead-letter and retry topology). Lists them with `rabbitmqctl` when the broker runs on
 * this machine; `known` names are deleted in any case.
 */
export async function deleteByPrefix(
  connection: amqp.ChannelModel,
  prefix: string,
  known: string[] = [],
): Promise<void> {
  const queues = new Set([...known, ...(await listNames('list_queues', prefix))]);
  const exchanges = new Set([...known, ...(await listNames('list_exchanges', prefix))]);
  const channel = await connection.createChannel();
  // NOTE: deleting a queue or exchange that does not exist succeeds, so a known name is tried as both.
  for (const queue of queues) await channel.deleteQueue(queue);
  for (const exchange of exchanges) await channel.deleteExchange(exchange);
  await channel.close();
}

/** Deletes the queues and exchanges a suite declared, by name. */
export async function deleteAll(
  connection: amqp.ChannelModel,
  names: { queues?: string[]; exchanges?: string[] },
): Promise<void> {
  const channel = await connection.createChannel();
  for (const queue of names.queues ?? []) await channel.deleteQueue(queue);
  for (const exchange of names.exchanges ?? []) await channel.deleteExchange(exchange);
  await channel.close();
}

async function listNames(command: 'list_queues' | 'list_exchanges', prefix: string): Promise<string[]> {
  try {
    const { stdout } = await run('rabbitmqctl', ['-q', command, 'name', '--no-table-headers']);
    return stdout.split('\n').filter((name) => name.startsWith(prefix));
  } catch {
    return [];
  }
}

/** The results as a Markdown table: each line's median rates, their ratio and whether the target is met. */
export function formatTable(comparisons: Comparison[]): string {
  const lines = [
    '| suite | scenario | baseline msgs/s | module msgs/s | ratio | target | met | CPU µs/msg baseline | CPU µs/msg module |',
    '| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |',
  ];
  for (const comparison of comparisons) {
    const baseline = medianRate(comparison.baseline);
    const candidate = medianRate(comparison.candidate);
    const ratio = candidate / baseline;
    const { target, minRate, maxCpuMicros } = comparison;
    const met =
      ratio >= target &&
      (minRate === undefined || candidate >= minRate) &&
      (maxCpuMicros === undefined || medianCpuPerMessage(comparison.candidate) <= maxCpuMicros);
    const wanted = [
      target > 0 ? `${target.toFixed(2)}x` : '',
      minRate !== undefined ? `≥ ${minRate} msgs/s` : '',
      maxCpuMicros !== undefined ? `≤ ${maxCpuMicros} CPU µs/msg` : '',
    ]
      .filter(Boolean)
      .join(', ');
    lines.push(
      `| ${comparison.suite} | ${comparison.scenario} | ${Math.round(baseline)} | ${Math.round(candidate)} | ` +
        `${ratio.toFixed(2)}x | ${wanted || '—'} | ${wanted ? (met ? 'yes' : 'NO') : '—'} | ` +
        `${cpuCell(comparison.baseline)} | ${cpuCell(comparison.candidate)} |`,
    );
  }
  return lines.join('\n');
}

/** The median CPU µs per message of runs, or a dash when another process did the work (NaN). */
function cpuCell(measurements: Measurement[]): string {
  const micros = medianCpuPerMessage(measurements);
  return Number.isFinite(micros) ? String(Math.round(micros)) : '—';
}

/** The `p`-th percentile (0..100) of `samples`, nearest rank. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Latency results as a Markdown table: p50, p99 and max of baseline and module, and whether the targets are met. */
export function formatLatencyTable(latencies: LatencyComparison[]): string {
  const lines = [
    '| suite | scenario | baseline p50 ms | baseline p99 ms | module p50 ms | module p99 ms | module max ms | target p50 / p99 ms | met |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const latency of latencies) {
    const p50 = percentile(latency.candidateMs, 50);
    const p99 = percentile(latency.candidateMs, 99);
    const met = p50 <= latency.targets.p50Ms && p99 <= latency.targets.p99Ms;
    lines.push(
      `| ${latency.suite} | ${latency.scenario} | ${percentile(latency.baselineMs, 50).toFixed(1)} | ` +
        `${percentile(latency.baselineMs, 99).toFixed(1)} | ${p50.toFixed(1)} | ${p99.toFixed(1)} | ` +
        `${percentile(latency.candidateMs, 100).toFixed(1)} | ${latency.targets.p50Ms} / ${latency.targets.p99Ms} | ${met ? 'yes' : 'NO'} |`,
    );
  }
  return lines.join('\n');
}

/** The machine and versions the figures were measured on. */
export function describeMachine(): string {
  const cpu = cpus();
  return (
    `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
    `Node ${process.versions.node}, ${MESSAGES} messages × ${ROUNDS} rounds (median)`
  );
}

/** Polls until `done()`; fails after `timeoutMs` without progress of `progress()`. */
export async function until(done: () => boolean, progress: () => number, timeoutMs = 60_000): Promise<void> {
  let last = progress();
  let lastChange = Date.now();
  while (!done()) {
    await new Promise((resolve) => setTimeout(resolve, 2));
    const now = progress();
    if (now !== last) [last, lastChange] = [now, Date.now()];
    if (Date.now() - lastChange > timeoutMs) throw new Error(`no progress for ${timeoutMs} ms (at ${now})`);
  }
}
