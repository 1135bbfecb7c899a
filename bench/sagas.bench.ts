import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IsInt, IsString } from 'class-validator';
import type { DataSource } from 'typeorm';
import {
  MessagePublisher,
  MessageType,
  ReliableMessagingModule,
  Saga,
  SagaStep,
  type SagaContext,
} from 'nestjs-reliable-messaging';
import { MessagingMetrics } from 'nestjs-reliable-messaging/operations';
import { createBenchDatabase } from './bench-database';
import {
  alternate,
  AMQP_URL,
  deleteByPrefix,
  medianCpuPerMessage,
  medianRate,
  percentile,
  rawConnection,
  ROUNDS,
  uniquePrefix,
  type Comparison,
  type Measurement,
  type Suite,
} from './harness';
import { bootApp } from './outbox.bench';

/** Steps of each measured run: `BENCH_SAGA_STEPS`, else 4,000. */
const STEPS = Number(process.env.BENCH_SAGA_STEPS ?? 4_000);
/** Messages per instance in the low and high contention workloads. */
const PER_INSTANCE = 10;
/**
 * Handlers at once: the optimistic step's `concurrency`, and the key-ordered step's partitions (one handler
 * each): `BENCH_SAGA_SLOTS`, else 16.
 */
const SLOTS = Number(process.env.BENCH_SAGA_SLOTS ?? 16);
/** How long each step holds its transaction after reading its instance, as a step's own writes would. */
const WORK_MS = Number(process.env.BENCH_SAGA_WORK_MS ?? 2);
/** Publishes awaiting their confirm at once while the backlog is written. */
const PUBLISH_WINDOW = 200;
/** How often the drain polls the instances for the steps applied. */
const POLL_MS = 20;
/** How long a drain may apply nothing before the suite fails. */
const STALL_MS = 60_000;

@MessageType({
  type: 'bench.saga.counted',
  idempotencyKey: (m: Counted) => `counted:${m.instance}:${m.n}`,
  orderingKey: (m: Counted) => m.instance,
})
class Counted {
  @IsString() instance!: string;
  @IsInt() n!: number;
}

/** The two ways a step's messages for one instance are kept from losing an update. */
type Mode = 'optimistic' | 'key-ordered';

/** A backlog's shape: which instance each message, in queue order, is for. */
interface Workload {
  name: string;
  /** What the workload is, for the table. */
  describe: string;
  /** The instance of each message, in the order they are published. */
  instances: (round: string) => string[];
}

/** Instances `0..count-1` of `round`, `perInstance` messages each, round-robin (one of each, then again). */
const interleaved =
  (count: number, perInstance: number) =>
  (round: string): string[] =>
    Array.from({ length: count * perInstance }, (_, n) => `${round}-${n % count}`);

/** Instances `0..count-1` of `round`, `perInstance` messages each, one instance's messages after the other. */
const grouped =
  (count: number, perInstance: number) =>
  (round: string): string[] =>
    Array.from({ length: count * perInstance }, (_, n) => `${round}-${Math.floor(n / perInstance)}`);

const MANY = Math.max(1, Math.round(STEPS / PER_INSTANCE));
const HOT = Math.max(1, Math.floor(SLOTS / 2));
const WORKLOADS: Workload[] = [
  {
    name: 'low contention',
    describe: `${MANY.toLocaleString('en')} instances × ${PER_INSTANCE}, interleaved: one message of an instance at a time`,
    instances: interleaved(MANY, PER_INSTANCE),
  },
  {
    name: 'high contention',
    describe: `${MANY.toLocaleString('en')} instances × ${PER_INSTANCE}, each instance's ${PER_INSTANCE} together: ${PER_INSTANCE} messages of an instance at once`,
    instances: grouped(MANY, PER_INSTANCE),
  },
  {
    name: 'hot instances',
    describe: `${HOT} instances × ${Math.round(STEPS / HOT).toLocaleString('en')}, interleaved: every instance busy all along`,
    instances: interleaved(HOT, Math.round(STEPS / HOT)),
  },
];

/** What the steps of one run did: every run of each message's step, timed. */
class StepRecorder {
  /** Step runs, re-runs included. */
  runs = 0;
  /** When the first run of each message began. */
  readonly firstStart = new Map<string, number>();
  /** When the latest run of each message ended: the one that committed, once the drain is done. */
  readonly lastEnd = new Map<string, number>();
  /** When the first step of the run began, and the process's CPU time then. */
  started?: { at: number; cpu: NodeJS.CpuUsage };

  begin(messageId: string): void {
    this.runs++;
    this.started ??= { at: performance.now(), cpu: process.cpuUsage() };
    if (!this.firstStart.has(messageId)) this.firstStart.set(messageId, performance.now());
  }

  end(messageId: string): void {
    this.lastEnd.set(messageId, performance.now());
  }

  /** Each message's handler latency: from its first run's start to its last run's end, re-runs included. */
  latencies(): number[] {
    return [...this.firstStart].map(([id, start]) => (this.lastEnd.get(id) ?? Number.NaN) - start);
  }
}

/** The saga of `mode`: one step, which starts the instance or continues it, counting its messages. */
function countingSaga(mode: Mode, name: string, recorder: { current: StepRecorder }): new () => object {
  const ordering =
    mode === 'key-ordered' ? { ordering: { by: 'key' as const, partitions: SLOTS } } : { concurrency: SLOTS };

  @Saga({ name, initialState: () => ({ count: 0 }) })
  class CountingSaga {
    @SagaStep(Counted, { correlate: (m) => m.instance, onMissing: 'start', ...ordering })
    async onCounted(_event: Counted, saga: SagaContext<{ count: number }>): Promise<void> {
      const id = saga.envelope.messageId;
      recorder.current.begin(id);
      await saga.manager?.query('SELECT pg_sleep($1)', [WORK_MS / 1000]);
      saga.state.count += 1;
      recorder.current.end(id);
    }
  }
  return CountingSaga;
}

/** One drain: its measurement, and what it adds to it. */
interface Drain {
  measurement: Measurement;
  latencies: number[];
  conflicts: number;
  runs: number;
  lost: number;
}

/** One mode's apps: its own exchange, saga and queues. */
interface Side {
  mode: Mode;
  saga: string;
  exchange: string;
  recorder: { current: StepRecorder };
  provider: new () => object;
  publisher: INestApplicationContext;
}

/** Boots the app that runs `side`'s step on its own exchange; its consumers start at once. */
async function bootConsumers(side: Side, dataSource: DataSource): Promise<INestApplicationContext> {
  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange: side.exchange,
        connectionName: `${side.exchange}.steps`,
        dataSource,
        outbox: { relay: false },
      }),
    ],
    providers: [side.provider],
  })
  class SagaBenchModule {}
  return NestFactory.createApplicationContext(SagaBenchModule, { logger: ['error', 'warn'] });
}

/** Publishes the backlog, `PUBLISH_WINDOW` at a time, in the workload's order. */
async function publishBacklog(publisher: MessagePublisher, instances: string[]): Promise<void> {
  for (let from = 0; from < instances.length; from += PUBLISH_WINDOW) {
    await Promise.all(
      instances
        .slice(from, from + PUBLISH_WINDOW)
        .map((instance, i) => publisher.publishNow(Object.assign(new Counted(), { instance, n: from + i }))),
    );
  }
}

/**
 * One run: the workload's backlog published with no consumer up, then the steps' app started and timed from its
 * first step to the moment every message is applied; then each instance checked against what was sent to it.
 */
async function drain(side: Side, dataSource: DataSource, workload: Workload, round: string): Promise<Drain> {
  const instances = workload.instances(round);
  const sent = new Map<string, number>();
  for (const instance of instances) sent.set(instance, (sent.get(instance) ?? 0) + 1);
  await publishBacklog(side.publisher.get(MessagePublisher), instances);

  const recorder = new StepRecorder();
  side.recorder.current = recorder;
  const app = await bootConsumers(side, dataSource);
  let measurement: Measurement;
  let conflicts: number;
  try {
    const applied = async (): Promise<number> => {
      const [{ n }] = await dataSource.query<Array<{ n: number }>>(
        `SELECT coalesce(sum((state->>'count')::int), 0)::int AS n FROM rm_saga WHERE saga = $1 AND correlation_key LIKE $2`,
        [side.saga, `${round}-%`],
      );
      return n;
    };
    let last = -1;
    let lastChange = Date.now();
    for (let n = await applied(); n < instances.length; n = await applied()) {
      if (n !== last) [last, lastChange] = [n, Date.now()];
      if (Date.now() - lastChange > STALL_MS)
        throw new Error(
          `${side.mode} ${workload.name}: ${n} of ${instances.length} steps applied, then none for ${STALL_MS} ms`,
        );
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const ended = performance.now();
    const cpu = process.cpuUsage(recorder.started!.cpu);
    measurement = {
      messages: instances.length,
      seconds: (ended - recorder.started!.at) / 1000,
      cpuMicros: cpu.user + cpu.system,
    };
    const counter = await app.get(MessagingMetrics).sagaConflicts.get();
    conflicts = counter.values.reduce((sum, value) => sum + value.value, 0);
  } finally {
    await app.close();
  }

  // No update lost: each instance counted every message sent to it, at one version and one history row each.
  const rows = await dataSource.query<
    Array<{ key: string; count: number; version: number; history: number }>
  >(
    `SELECT s.correlation_key AS key, (s.state->>'count')::int AS count, s.version, ` +
      `(SELECT count(DISTINCT h.message_id) FROM rm_saga_history h WHERE h.saga_id = s.id)::int AS history ` +
      `FROM rm_saga s WHERE s.saga = $1 AND s.correlation_key LIKE $2`,
    [side.saga, `${round}-%`],
  );
  const found = new Map(rows.map((row) => [row.key, row]));
  let lost = 0;
  for (const [instance, count] of sent) {
    const row = found.get(instance);
    lost += Math.max(0, count - Math.min(row?.count ?? 0, row?.version ?? 0, row?.history ?? 0));
  }
  return { measurement, latencies: recorder.latencies(), conflicts, runs: recorder.runs, lost };
}

/** A mode's drains of one workload, summed up. */
interface Summary {
  rate: number;
  cpuMicros: number;
  p50: number;
  p99: number;
  conflicts: number;
  runs: number;
  steps: number;
  lost: number;
}

function summarise(drains: Drain[]): Summary {
  const latencies = drains.flatMap((one) => one.latencies);
  const measurements = drains.map((one) => one.measurement);
  const sum = (pick: (one: Drain) => number): number => drains.reduce((total, one) => total + pick(one), 0);
  return {
    rate: medianRate(measurements),
    cpuMicros: medianCpuPerMessage(measurements),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    conflicts: sum((one) => one.conflicts),
    runs: sum((one) => one.runs),
    steps: sum((one) => one.measurement.messages),
    lost: sum((one) => one.lost),
  };
}

/**
 * Saga steps racing for their instances, two ways, on the same backlog in the same run: optimistic (a plain queue,
 * `concurrency` SLOTS; a step that lost the race runs again at once) against key-ordered (SLOTS partitions, the
 * correlation key as ordering key: an instance's messages one at a time). Three workloads: many instances with
 * one message of each at a time, the same with ten of each at once, and a few hot instances. Reports steps/s, the
 * handler's latency (re-runs included), the conflicts, the CPU per step, and checks that no update was lost.
 */
export const sagasSuite: Suite = {
  name: 'sagas',
  async run() {
    const prefix = uniquePrefix('sagas');
    const db = await createBenchDatabase();
    const connection = await rawConnection(`${prefix}.raw`);
    const sides: Side[] = [];
    try {
      const dataSource = await db.connect(SLOTS + 6);
      for (const mode of ['optimistic', 'key-ordered'] as const) {
        const saga = `${prefix}-${mode}`;
        const exchange = `${prefix}.${mode}.events`;
        const recorder = { current: new StepRecorder() };
        const side: Side = {
          mode,
          saga,
          exchange,
          recorder,
          provider: countingSaga(mode, saga, recorder),
          publisher: await bootApp({
            urls: AMQP_URL,
            exchange,
            connectionName: `${exchange}.publisher`,
            consumersEnabled: false,
            outbox: { relay: false },
          }),
        };
        sides.push(side);
        // The steps' queues (and partitions) exist before the first backlog is published to them.
        await (await bootConsumers(side, dataSource)).close();
      }
      const [optimistic, keyed] = sides;

      const comparisons: Comparison[] = [];
      const lines: string[] = [];
      const table = [
        `| workload | mode | steps/s | handler p50 ms | handler p99 ms | conflicts (re-runs) | CPU µs/step | updates lost |`,
        '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ];
      let lostInAll = 0;
      for (const [index, workload] of WORKLOADS.entries()) {
        const drains: Record<Mode, Drain[]> = { optimistic: [], 'key-ordered': [] };
        let round = 0;
        const runs = await alternate(
          ROUNDS,
          async () => {
            const one = await drain(optimistic, dataSource, workload, `w${index}r${round}`);
            drains.optimistic.push(one);
            return one.measurement;
          },
          async () => {
            const one = await drain(keyed, dataSource, workload, `w${index}r${round++}`);
            drains['key-ordered'].push(one);
            return one.measurement;
          },
        );
        comparisons.push({
          suite: 'sagas',
          scenario: `${workload.name}: key-ordered (${SLOTS} partitions) against optimistic (concurrency ${SLOTS})`,
          ...runs,
          target: 0,
        });
        const o = summarise(drains.optimistic);
        const k = summarise(drains['key-ordered']);
        lostInAll += o.lost + k.lost;
        lines.push(
          `sagas: ${workload.name} key-ordered/optimistic ${(k.rate / o.rate).toFixed(2)}x steps/s ` +
            `cpu ${(k.cpuMicros / o.cpuMicros).toFixed(2)}x p99 ${Math.round(k.p99)}/${Math.round(o.p99)} ms ` +
            `conflicts ${k.conflicts}/${o.conflicts} lost ${k.lost}/${o.lost}`,
        );
        for (const [mode, summary] of [
          ['optimistic', o],
          ['key-ordered', k],
        ] as const) {
          table.push(
            `| ${workload.name}: ${workload.describe} | ${mode} | ${Math.round(summary.rate)} | ` +
              `${summary.p50.toFixed(1)} | ${summary.p99.toFixed(1)} | ` +
              `${summary.conflicts.toLocaleString('en')} (${summary.runs - summary.steps} re-runs of ${summary.steps.toLocaleString('en')} steps) | ` +
              `${Math.round(summary.cpuMicros)} | ${summary.lost} |`,
          );
        }
      }
      for (const line of lines) console.log(line);
      if (lostInAll > 0) throw new Error(`sagas: ${lostInAll} updates lost (see the lines above)`);
      const note =
        `${SLOTS} handlers at once on each side, each step holding its transaction ${WORK_MS} ms after its read; ` +
        `${ROUNDS} rounds per side, alternated, on the same backlog; latency from a message's first run to the end of its last.`;
      return { comparisons, latencies: [], tables: [`${table.join('\n')}\n\n${note}`] };
    } finally {
      for (const side of sides) await side.publisher.close();
      // The steps' queues and partitions by name, should the broker not be on this machine to list them.
      const queues = sides.flatMap(({ saga }) => [
        `${saga}.bench.saga.counted`,
        ...Array.from(
          { length: SLOTS },
          (_, p) => `${saga}.bench.saga.counted.p${String(p).padStart(3, '0')}`,
        ),
      ]);
      await deleteByPrefix(connection, prefix, [
        ...sides.map((side) => side.exchange),
        ...queues,
        ...queues.map((queue) => `${queue}.dlq`),
      ]);
      await connection.close();
      await db.drop();
    }
  },
};
