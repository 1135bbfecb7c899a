import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Consume, ReliableMessagingModule, type QueueType } from 'nestjs-reliable-messaging';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { BenchOrderPlaced } from './bench-message';
import { prepublish } from './consume.bench';
import { AMQP_URL, deleteByPrefix, MESSAGES, Progress, rawConnection, uniquePrefix } from './harness';

/**
 * Profiles the module's consumer alone: the messages are published before the profiler starts, so the CPU
 * profile holds only the drain (and the app's boot, a few milliseconds of it).
 *
 *   npm run build && node dist/bench/profile-consume.js [quorum|classic] [prefetch] [out.cpuprofile | -]
 *
 * With `-` instead of a file it measures without the profiler. Prints the CPU µs per message and the functions with the most self time; the profile opens in Chrome DevTools
 * or speedscope.
 */
async function main(): Promise<void> {
  const queueType = (process.argv[2] ?? 'quorum') as QueueType;
  const prefetch = Number(process.argv[3] ?? 200);
  const out = process.argv[4] ?? 'consume.cpuprofile';
  const prefix = uniquePrefix('profile');
  const queue = `${prefix}.module`;
  const progress: { current?: Progress } = {};

  @Injectable()
  class ProfiledConsumer {
    @Consume({ queue, queueType, concurrency: prefetch, prefetch })
    async onOrderPlaced(_event: BenchOrderPlaced): Promise<void> {
      progress.current?.started();
      progress.current?.completed();
    }
  }
  @Module({
    imports: [ReliableMessagingModule.forRoot({ urls: AMQP_URL, exchange: `${prefix}.events` })],
    providers: [ProfiledConsumer],
  })
  class ProfiledModule {}
  const app: DynamicModule = { module: ProfiledModule };

  const connection = await rawConnection(`${prefix}.publisher`);
  try {
    const setup = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
    const declared = setup.get(ConsumerRegistry).consumers[0].queue;
    await setup.close();
    await prepublish(connection, declared, MESSAGES);

    const profiling = out !== '-';
    const session = new Session();
    if (profiling) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
    }
    progress.current = new Progress(MESSAGES);
    const context = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
    await progress.current.finished;
    const measurement = progress.current.measurement();
    const profile = profiling ? (await session.post('Profiler.stop')).profile : undefined;
    await context.close();
    if (profile) writeFileSync(out, JSON.stringify(profile));
    console.log(
      `${queueType}, prefetch ${prefetch}: ${Math.round(measurement.messages / measurement.seconds)} msgs/s, ` +
        `${(measurement.cpuMicros / measurement.messages).toFixed(1)} µs CPU/msg` +
        (profile ? ` (profiler on); profile in ${out}` : ''),
    );
    if (profile) console.log(topSelfTime(profile, Number(process.env.PROFILE_TOP ?? 45)));
  } finally {
    await deleteByPrefix(connection, prefix, [queue, `${queue}.dlq`, `${prefix}.events`]);
    await connection.close();
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** The functions with the most self time, as share of the samples that were not idle. */
function topSelfTime(profile: { nodes: ProfileNode[]; samples?: number[] }, count: number): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const hits = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples ?? []) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(program)') continue;
    busy++;
    const where = frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, '');
    const key = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    hits.set(key, (hits.get(key) ?? 0) + 1);
  }
  return [...hits.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, n]) => `${((100 * n) / busy).toFixed(1).padStart(5)}%  ${key}`)
    .join('\n');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
