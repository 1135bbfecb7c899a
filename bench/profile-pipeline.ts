import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Channel, ConsumeMessage } from 'amqplib';
import { Consume, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { BenchOrderPlaced, rawEnvelope } from './bench-message';
import { AMQP_URL, deleteByPrefix, rawConnection, uniquePrefix } from './harness';

/**
 * The module's consumer pipeline alone, without the broker: deliveries shaped as amqplib decodes them (the
 * module's envelope) go through the consumer's runner and reliability chain in bursts of `prefetch`, acked on a
 * channel that only counts. What it prints is the module's own CPU per message, free of the broker's and the
 * client library's noise, so two builds can be compared on a loaded machine.
 *
 *   npm run build && node dist/bench/profile-pipeline.js [messages] [prefetch] [out.cpuprofile | out.heapprofile]
 *
 * A `.heapprofile` samples allocations (by the stack that made them) instead of the CPU.
 */
async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 200_000);
  const prefetch = Number(process.argv[3] ?? 200);
  const out = process.argv[4];
  const prefix = uniquePrefix('pipeline');
  const queue = `${prefix}.module`;
  let handled = 0;
  let wake: (() => void) | undefined;
  let waitFor = 0;

  @Injectable()
  class ProfiledConsumer {
    @Consume({ queue, queueType: 'quorum', concurrency: prefetch, prefetch })
    async onOrderPlaced(_event: BenchOrderPlaced): Promise<void> {
      if (++handled === waitFor) wake?.();
    }
  }
  @Module({
    imports: [ReliableMessagingModule.forRoot({ urls: AMQP_URL, exchange: `${prefix}.events` })],
    providers: [ProfiledConsumer],
  })
  class ProfiledModule {}

  const context = await NestFactory.createApplicationContext(ProfiledModule, { logger: ['error', 'warn'] });
  const registry: unknown = context.get(ConsumerRegistry);
  const runner = (registry as { runners: Runner[] }).runners[0];
  let acked = 0;
  const channel = { ack: () => acked++, nack: () => undefined } as unknown as Channel;
  const templates = Array.from({ length: 1000 }, (_, n) => rawEnvelope(n));
  const deliver = (tag: number): void => {
    const { body, properties } = templates[tag % templates.length];
    runner.onMessage(channel, asDelivered(queue, tag, body, properties));
  };
  const run = async (count: number): Promise<void> => {
    for (let sent = 0; sent < count;) {
      const burst = Math.min(prefetch, count - sent);
      waitFor = handled + burst;
      const done = new Promise<void>((resolve) => (wake = resolve));
      for (let n = 0; n < burst; n++) deliver(++sent);
      await done;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  await run(Math.min(20_000, total));
  const session = new Session();
  const heap = out?.endsWith('.heapprofile');
  if (out) session.connect();
  if (out && heap) {
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  } else if (out) {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run(total);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  if (out && heap)
    writeFileSync(out, JSON.stringify((await session.post('HeapProfiler.stopSampling')).profile));
  else if (out) writeFileSync(out, JSON.stringify((await session.post('Profiler.stop')).profile));
  console.log(
    `pipeline, prefetch ${prefetch}: ${((used.user + used.system) / total).toFixed(2)} µs CPU/msg, ` +
      `${Math.round(total / seconds)} msgs/s, ${acked} acked`,
  );
  await context.close();
  const connection = await rawConnection(`${prefix}.cleanup`);
  await deleteByPrefix(connection, prefix, [queue, `${queue}.dlq`, `${prefix}.events`]);
  await connection.close();
}

interface Runner {
  onMessage(channel: Channel, message: ConsumeMessage): void;
}

/** A delivery as amqplib hands it over: every basic property present, absent ones undefined. */
function asDelivered(
  queue: string,
  deliveryTag: number,
  content: Buffer,
  published: ReturnType<typeof rawEnvelope>['properties'],
): ConsumeMessage {
  return {
    content,
    fields: { consumerTag: 'bench', deliveryTag, redelivered: false, exchange: '', routingKey: queue },
    properties: {
      contentType: published.contentType,
      contentEncoding: published.contentEncoding,
      headers: { ...(published.headers as Record<string, unknown>) },
      deliveryMode: 2,
      priority: undefined,
      correlationId: published.correlationId,
      replyTo: undefined,
      expiration: undefined,
      messageId: published.messageId ?? randomUUID(),
      timestamp: published.timestamp,
      type: published.type,
      userId: undefined,
      appId: published.appId,
      clusterId: undefined,
    },
  };
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
