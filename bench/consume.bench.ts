import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel, ConsumeMessage } from 'amqplib';
import { Consume, ReliableMessagingModule, type QueueType } from 'nestjs-reliable-messaging';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { BenchOrderPlaced, rawEnvelope, type BenchEnvelope } from './bench-message';
import {
  alternate,
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  Progress,
  rawConnection,
  ROUNDS,
  uniquePrefix,
  type Comparison,
  type Measurement,
  type Suite,
} from './harness';

/** Unacknowledged deliveries in flight, for both consumers; the module's consumer runs as many handlers at once. */
const PREFETCH = Number(process.env.BENCH_PREFETCH ?? 20);

/**
 * The module's side: an app whose one consumer does no work of its own, so what is measured is the module. It
 * runs `prefetch` handlers at once.
 */
export function consumerApp(
  exchange: string,
  queue: string,
  queueType: QueueType,
  progress: { current?: Progress },
  prefetch = PREFETCH,
): DynamicModule {
  @Injectable()
  class BenchConsumer {
    @Consume({ queue, queueType, concurrency: prefetch, prefetch })
    async onOrderPlaced(_event: BenchOrderPlaced): Promise<void> {
      progress.current?.started();
      progress.current?.completed();
    }
  }

  @Module({
    imports: [ReliableMessagingModule.forRoot({ urls: AMQP_URL, exchange, connectionName: `${queue}.app` })],
    providers: [BenchConsumer],
  })
  class BenchConsumerModule {}

  return { module: BenchConsumerModule };
}

/** Publishes `count` messages straight to `queue` with a raw confirm channel (not measured). */
export async function prepublish(
  connection: ChannelModel,
  queue: string,
  count: number,
  envelope: BenchEnvelope = rawEnvelope,
): Promise<void> {
  const channel = await connection.createConfirmChannel();
  for (let n = 0; n < count; n++) {
    const { body, properties } = envelope(n);
    if (!channel.sendToQueue(queue, body, properties))
      await new Promise((resolve) => channel.once('drain', resolve));
    if (n % 1000 === 999) await channel.waitForConfirms();
  }
  await channel.waitForConfirms();
  await channel.close();
}

/** Drains `queue` with a raw amqplib consumer: the same prefetch, JSON.parse as its work, ack after the work. */
export async function rawDrain(
  connection: ChannelModel,
  queue: string,
  prefetch = PREFETCH,
): Promise<Measurement> {
  const progress = new Progress(MESSAGES);
  const channel = await connection.createChannel();
  await channel.prefetch(prefetch);
  const work = async (message: ConsumeMessage): Promise<void> => {
    JSON.parse(message.content.toString('utf8'));
  };
  const { consumerTag } = await channel.consume(queue, (message) => {
    if (!message) return;
    progress.started();
    void work(message)
      .then(() => {
        channel.ack(message);
        progress.completed();
      })
      .catch((error: unknown) => progress.fail(error));
  });
  await progress.finished;
  await channel.cancel(consumerTag);
  await channel.close();
  return progress.measurement();
}

/** Drains `queue` through the module: boots the app, whose consumer starts on its own, and closes it after. */
async function moduleDrain(app: DynamicModule, progress: { current?: Progress }): Promise<Measurement> {
  progress.current = new Progress(MESSAGES);
  const context = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
  await progress.current.finished;
  const measurement = progress.current.measurement();
  await context.close();
  return measurement;
}

async function compare(queueType: QueueType): Promise<Comparison> {
  const prefix = uniquePrefix(`consume-${queueType}`);
  const exchange = `${prefix}.events`;
  const moduleQueue = `${prefix}.module`;
  const rawQueue = `${prefix}.raw`;
  const connection = await rawConnection(`${prefix}.raw`);
  const progress: { current?: Progress } = {};
  const app = consumerApp(exchange, moduleQueue, queueType, progress);
  try {
    // A first boot declares the module's queue; the raw queue gets the same arguments, so the broker does the
    // same work for both (quorum: at-least-once dead-lettering, delivery limit, reject-publish overflow).
    const setup = await NestFactory.createApplicationContext(app, { logger: ['error', 'warn'] });
    const declared = setup.get(ConsumerRegistry).consumers[0].queueArguments;
    await setup.close();
    const channel = await connection.createChannel();
    await channel.assertQueue(rawQueue, {
      durable: true,
      arguments: { ...declared, 'x-dead-letter-routing-key': rawQueue },
    });
    await channel.close();

    const runs = await alternate(
      ROUNDS,
      async () => {
        await prepublish(connection, rawQueue, MESSAGES);
        return rawDrain(connection, rawQueue);
      },
      async () => {
        await prepublish(connection, moduleQueue, MESSAGES);
        return moduleDrain(app, progress);
      },
    );
    return { suite: 'consume', scenario: `${queueType} queue, prefetch ${PREFETCH}`, ...runs, target: 0.9 };
  } finally {
    await deleteByPrefix(connection, prefix, [moduleQueue, `${moduleQueue}.dlq`, rawQueue, exchange]);
    await connection.close();
  }
}

/**
 * Drains the same pre-published messages through the module's consumer (envelope, validation and the whole
 * reliability pipeline on) and through a raw amqplib consumer with the same prefetch and ack-after-work.
 */
export const consumeSuite: Suite = {
  name: 'consume',
  async run() {
    return [await compare('quorum'), await compare('classic')];
  },
};
