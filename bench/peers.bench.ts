import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import type { QueueType } from 'nestjs-reliable-messaging';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { prepublish } from './consume.bench';
import {
  AMQP_URL,
  deleteByPrefix,
  medianCpuPerMessage,
  medianRate,
  MESSAGES,
  rawConnection,
  ROUNDS,
  uniquePrefix,
  type Measurement,
  type Suite,
} from './harness';
import { moduleConsumerApp } from './peers/module-app';

/** Prefetch values to compare at: `BENCH_PEERS_PREFETCH`, comma-separated, else 20 and 200. */
const PREFETCHES = (process.env.BENCH_PEERS_PREFETCH ?? '20,200')
  .split(',')
  .map((value) => Number(value.trim()));

/** Queue types to compare on: `BENCH_PEERS_QUEUES`, comma-separated, else quorum and classic. */
const QUEUE_TYPES = (process.env.BENCH_PEERS_QUEUES ?? 'quorum,classic')
  .split(',')
  .map((value) => value.trim() as QueueType);

/** dist/bench, where the compiled contenders are; the repository root is two levels up. */
const DIST_BENCH = __dirname;
const GOLEVELUP = resolve(DIST_BENCH, '..', '..', 'bench', 'golevelup');

/** A consumer a user might choose instead of the module, run as a node script in a process of its own. */
interface Contender {
  /** Its line in the table. */
  name: string;
  /** A short name for its queue. */
  key: string;
  script: string;
}

const RAW = 'raw amqplib';
const GOLEVELUP_NAME = '@golevelup/nestjs-rabbitmq 9';
const MODULE = 'this module (@Consume)';

const CONTENDERS: Contender[] = [
  { name: RAW, key: 'raw', script: join(DIST_BENCH, 'peers', 'raw-consumer.js') },
  { name: GOLEVELUP_NAME, key: 'golevelup', script: join(GOLEVELUP, 'consumer.mjs') },
  {
    name: 'NestJS RMQ transport',
    key: 'nest',
    script: join(DIST_BENCH, 'peers', 'nest-transport-consumer.js'),
  },
  { name: 'rascal', key: 'rascal', script: join(DIST_BENCH, 'peers', 'rascal-consumer.js') },
  { name: MODULE, key: 'module', script: join(DIST_BENCH, 'peers', 'module-consumer.js') },
];

/** The targets the module must meet against its peers, on a quorum queue at prefetch 200. */
const TARGET = { queueType: 'quorum', prefetch: 200, vsRaw: 0.95, cpuMicros: 20 } as const;

/** Every run of one contender in one scenario. */
interface PeerLine {
  queueType: QueueType;
  prefetch: number;
  contender: string;
  runs: Measurement[];
}

/** How long a contender may take to start and drain a run before it is killed and the suite fails. */
function runTimeoutMs(messages: number): number {
  return 60_000 + 5 * messages;
}

/**
 * Installs bench/golevelup's own dependencies (NestJS 11) from its lockfile when they are missing; the root
 * project, on NestJS 12, cannot hold them.
 */
async function installGolevelup(): Promise<void> {
  if (existsSync(join(GOLEVELUP, 'node_modules', '@golevelup', 'nestjs-rabbitmq'))) return;
  console.log(`peers: installing ${GOLEVELUP}'s dependencies (npm ci)`);
  await promisify(execFile)(
    'npm',
    ['ci', '--prefix', GOLEVELUP, '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
    { timeout: 300_000 },
  );
}

/**
 * Runs one contender's process over a queue holding `MESSAGES` messages and reads the Measurement it prints, and
 * how many messages it left in the queue; fails when it exits without a Measurement.
 */
async function drain(
  contender: Contender,
  env: Record<string, string>,
  connection: ChannelModel,
  queue: string,
): Promise<{ measurement: Measurement; left: number }> {
  // NOTE: the IPC channel is there to close: a contender exits when it closes, so none outlives a killed suite.
  const child = spawn(process.execPath, [contender.script], {
    env: { ...process.env, ...env, PEERS_QUEUE: queue },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  let stdout = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const timeout = setTimeout(() => child.kill('SIGKILL'), runTimeoutMs(MESSAGES));
  const exit = await new Promise<number | null>((resolveExit, rejectExit) => {
    child.on('error', rejectExit);
    child.on('close', (code) => resolveExit(code));
  }).finally(() => clearTimeout(timeout));
  const reported = stdout
    .split('\n')
    .reverse()
    .find((line) => line.startsWith('{'));
  if (exit !== 0 || !reported)
    throw new Error(`${contender.name} exited with ${exit} without a result; its stdout:\n${stdout}`);
  const { messageCount } = await checkQueue(connection, queue);
  return { measurement: JSON.parse(reported) as Measurement, left: messageCount };
}

async function checkQueue(connection: ChannelModel, queue: string): Promise<{ messageCount: number }> {
  const channel = await connection.createChannel();
  try {
    return await channel.checkQueue(queue);
  } finally {
    await channel.close();
  }
}

/** Every contender on one queue type, at each prefetch, in alternating rounds. */
async function compareOn(queueType: QueueType): Promise<PeerLine[]> {
  const prefix = uniquePrefix(`peers-${queueType}`);
  const exchange = `${prefix}.events`;
  const queues = new Map(CONTENDERS.map((contender) => [contender, `${prefix}.${contender.key}`]));
  const moduleQueue = `${prefix}.module`;
  const connection = await rawConnection(`${prefix}.suite`);
  try {
    // A first boot of the module's app declares its queue; every other contender's queue gets the same
    // arguments, so the broker does the same work for all (quorum: at-least-once dead-lettering, delivery limit,
    // reject-publish overflow), and the contenders check it rather than declare their own.
    const setup = await NestFactory.createApplicationContext(
      moduleConsumerApp(AMQP_URL, exchange, moduleQueue, queueType, PREFETCHES[0]),
      { logger: ['error', 'warn'] },
    );
    const declared = setup.get(ConsumerRegistry).consumers[0].queueArguments;
    await setup.close();
    const channel = await connection.createChannel();
    for (const queue of queues.values())
      if (queue !== moduleQueue)
        await channel.assertQueue(queue, {
          durable: true,
          arguments: { ...declared, 'x-dead-letter-routing-key': queue },
        });
    await channel.close();

    const lines: PeerLine[] = [];
    for (const prefetch of PREFETCHES) {
      const runs = new Map(CONTENDERS.map((contender) => [contender, [] as Measurement[]]));
      const env = {
        AMQP_URL,
        PEERS_QUEUE_TYPE: queueType,
        PEERS_EXCHANGE: exchange,
        PEERS_PREFETCH: String(prefetch),
        PEERS_MESSAGES: String(MESSAGES),
      };
      for (let round = 0; round < ROUNDS; round++) {
        // Each round starts one contender further on, so that none always runs first.
        const order = CONTENDERS.map((_, n) => CONTENDERS[(n + round) % CONTENDERS.length]);
        for (const contender of order) {
          const queue = queues.get(contender)!;
          await prepublish(connection, queue, MESSAGES);
          const { measurement, left } = await drain(contender, env, connection, queue);
          console.log(
            `peers: ${queueType} queue, prefetch ${prefetch}, round ${round + 1}: ${contender.name} drained ` +
              `${measurement.messages} of ${MESSAGES} messages in ${measurement.seconds.toFixed(2)} s, ${left} left`,
          );
          if (measurement.messages !== MESSAGES || left !== 0)
            throw new Error(`${contender.name} did not drain ${queue}: the run is not comparable`);
          runs.get(contender)!.push(measurement);
        }
      }
      for (const [contender, measurements] of runs)
        lines.push({ queueType, prefetch, contender: contender.name, runs: measurements });
    }
    return lines;
  } finally {
    await deleteByPrefix(connection, prefix, [...queues.values(), `${moduleQueue}.dlq`, exchange]);
    await connection.close();
  }
}

/**
 * The contenders' median msgs/s, their ratio to raw amqplib's in the same scenario and run, and their median CPU
 * time per message (their own process's), as a Markdown table; then the module's targets and whether they are met.
 */
function formatPeersTable(lines: PeerLine[]): string {
  const rawRate = (line: PeerLine): number =>
    medianRate(lines.find((l) => sameScenario(l, line) && l.contender === RAW)?.runs ?? []);
  const table = [
    '| queue | prefetch | contender | msgs/s | vs raw | CPU µs/msg |',
    '| --- | ---: | --- | ---: | ---: | ---: |',
    ...lines.map(
      (line) =>
        `| ${line.queueType} | ${line.prefetch} | ${line.contender} | ${Math.round(medianRate(line.runs))} | ` +
        `${(medianRate(line.runs) / rawRate(line)).toFixed(2)}x | ${Math.round(medianCpuPerMessage(line.runs))} |`,
    ),
  ];
  const find = (contender: string): PeerLine | undefined =>
    lines.find(
      (line) =>
        line.queueType === TARGET.queueType &&
        line.prefetch === TARGET.prefetch &&
        line.contender === contender,
    );
  const [module, raw, golevelup] = [find(MODULE), find(RAW), find(GOLEVELUP_NAME)];
  if (!module || !raw || !golevelup)
    return [
      ...table,
      '',
      `Targets (${TARGET.queueType} queue, prefetch ${TARGET.prefetch}): not measured in this run.`,
    ].join('\n');
  const moduleRate = medianRate(module.runs);
  const vsRaw = moduleRate / medianRate(raw.runs);
  const golevelupRate = medianRate(golevelup.runs);
  const cpu = medianCpuPerMessage(module.runs);
  const met = (ok: boolean): string => (ok ? 'yes' : 'NO');
  return [
    ...table,
    '',
    `| module target (${TARGET.queueType} queue, prefetch ${TARGET.prefetch}) | measured | met |`,
    '| --- | ---: | --- |',
    `| at least ${TARGET.vsRaw.toFixed(2)}x raw amqplib | ${vsRaw.toFixed(2)}x | ${met(vsRaw >= TARGET.vsRaw)} |`,
    `| ahead of ${GOLEVELUP_NAME} | ${Math.round(moduleRate)} vs ${Math.round(golevelupRate)} msgs/s | ${met(moduleRate > golevelupRate)} |`,
    `| CPU at most ${TARGET.cpuMicros} µs/msg | ${Math.round(cpu)} | ${met(cpu <= TARGET.cpuMicros)} |`,
  ].join('\n');
}

function sameScenario(a: PeerLine, b: PeerLine): boolean {
  return a.queueType === b.queueType && a.prefetch === b.prefetch;
}

/**
 * Drains the same pre-published messages (the module's envelope) through the consumers a user might choose
 * instead of the module (raw amqplib, @golevelup/nestjs-rabbitmq, NestJS's RMQ transport, rascal) and through
 * the module, each in a fresh process of its own, from queues declared with the same arguments, at the same
 * prefetch, acking after a handler that does no work of its own.
 */
export const peersSuite: Suite = {
  name: 'peers',
  async run() {
    await installGolevelup();
    const lines: PeerLine[] = [];
    for (const queueType of QUEUE_TYPES) lines.push(...(await compareOn(queueType)));
    return { comparisons: [], latencies: [], tables: [formatPeersTable(lines)] };
  },
};
