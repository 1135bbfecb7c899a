import 'reflect-metadata';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Consume, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { BenchOrderPlaced } from './bench-message';
import { report, runChild, stopRequested } from './bench-child';
import { AMQP_URL, Progress } from './harness';
import { manyConsumersQueue } from './many-consumers-queue';

/**
 * An app whose one provider has `count` `@Consume()` methods, each on a queue of its own (quorum, the module's
 * defaults otherwise), each counting what it handles in `progress`. The methods are made at runtime, and declared
 * exactly as a compiled class's would be (the message class as their parameter's design type).
 */
function manyConsumersModule(prefix: string, count: number, progress: { current?: Progress }): DynamicModule {
  class ManyConsumers {}
  const prototype = ManyConsumers.prototype as unknown as Record<string, unknown>;
  for (let index = 0; index < count; index++) {
    const method = `onOrderPlaced${index}`;
    prototype[method] = async function onOrderPlaced(_event: BenchOrderPlaced): Promise<void> {
      progress.current?.started();
      progress.current?.completed();
    };
    Reflect.defineMetadata('design:paramtypes', [BenchOrderPlaced], prototype, method);
    const descriptor = Object.getOwnPropertyDescriptor(prototype, method)!;
    Consume({ queue: manyConsumersQueue(prefix, count, index), queueType: 'quorum' })(
      prototype,
      method,
      descriptor,
    );
  }
  Injectable()(ManyConsumers);

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange: `${prefix}.events`,
        connectionName: `${prefix}.many-${count}`,
      }),
    ],
    providers: [ManyConsumers],
  })
  class ManyConsumersAppModule {}
  return { module: ManyConsumersAppModule };
}

/**
 * The scale suite's many-consumers process (run with `--expose-gc`): boots an app with SCALE_CONSUMERS consumers
 * under SCALE_PREFIX and reports its start-up time and memory after a full GC; with SCALE_EXPECT, times the drain
 * of that many messages spread over its queues and reports its CPU; then waits for `stop` on stdin, so that the
 * suite can count its channels meanwhile, and closes.
 */
async function main(): Promise<void> {
  const count = Number(process.env.SCALE_CONSUMERS);
  const prefix = String(process.env.SCALE_PREFIX);
  const expected = Number(process.env.SCALE_EXPECT ?? 0);
  const progress: { current?: Progress } = {};
  if (expected > 0) progress.current = new Progress(expected);
  const memory = (): { rss: number; heapUsed: number } => {
    (globalThis as { gc?: () => void }).gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    return { rss, heapUsed };
  };
  const idle = memory();
  const started = performance.now();
  const app = await NestFactory.createApplicationContext(manyConsumersModule(prefix, count, progress), {
    logger: ['error', 'warn'],
  });
  const startupMs = performance.now() - started;
  report({ event: 'ready', startupMs, idle, booted: memory() });
  if (progress.current) {
    await progress.current.finished;
    const { seconds, cpuMicros, messages } = progress.current.measurement();
    report({ event: 'drained', seconds, cpuMicros, messages, drained: memory() });
  }
  await stopRequested();
  await app.close();
}

runChild(main);
