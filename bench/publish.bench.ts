import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { MessagePublisher, ReliableMessagingModule, type QueueType } from 'nestjs-reliable-messaging';
import { benchMessage, rawEnvelope } from './bench-message';
import {
  alternate,
  AMQP_URL,
  deleteByPrefix,
  MESSAGES,
  rawConnection,
  ROUNDS,
  startRun,
  uniquePrefix,
  type Comparison,
  type Measurement,
  type Suite,
} from './harness';

/** Publishes awaiting their confirm at once, for both publishers. */
const WINDOW = Number(process.env.BENCH_WINDOW ?? 50);

/** Runs `publishOne(n)` for n in 0..MESSAGES-1 with WINDOW of them in flight; resolves with the elapsed time. */
async function windowed(publishOne: (n: number) => Promise<void>): Promise<Measurement> {
  let next = 0;
  const end = startRun(MESSAGES);
  await Promise.all(
    Array.from({ length: WINDOW }, async () => {
      while (next < MESSAGES) await publishOne(next++);
    }),
  );
  return end();
}

/** One raw publish with the same envelope, persistent and mandatory, resolved by its broker confirm. */
function rawPublish(channel: ConfirmChannel, exchange: string, n: number): Promise<void> {
  const { body, properties } = rawEnvelope(n);
  return new Promise<void>((resolve, reject) => {
    channel.publish(
      exchange,
      'bench.order-placed',
      body,
      { ...properties, mandatory: true },
      (error: Error | null) => (error ? reject(error) : resolve()),
    );
  });
}

async function compare(queueType: QueueType): Promise<Comparison> {
  const prefix = uniquePrefix(`publish-${queueType}`);
  const exchange = `${prefix}.events`;
  const queue = `${prefix}.sink`;

  @Module({
    imports: [ReliableMessagingModule.forRoot({ urls: AMQP_URL, exchange, connectionName: `${prefix}.app` })],
  })
  class BenchPublisherModule {}

  const connection: ChannelModel = await rawConnection(`${prefix}.raw`);
  const app = await NestFactory.createApplicationContext(BenchPublisherModule, { logger: ['error', 'warn'] });
  try {
    const publisher = app.get(MessagePublisher);
    const setup = await connection.createChannel();
    await setup.assertExchange(exchange, 'topic', { durable: true });
    await setup.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': queueType } });
    await setup.bindQueue(queue, exchange, 'bench.order-placed');
    const channel = await connection.createConfirmChannel();
    const purge = async (): Promise<void> => {
      await setup.purgeQueue(queue);
    };

    const runs = await alternate(
      ROUNDS,
      async () => {
        const measurement = await windowed((n) => rawPublish(channel, exchange, n));
        await purge();
        return measurement;
      },
      async () => {
        const measurement = await windowed(async (n) => {
          await publisher.publishNow(benchMessage(n));
        });
        await purge();
        return measurement;
      },
    );
    await channel.close();
    await setup.close();
    return { suite: 'publish', scenario: `${queueType} queue, ${WINDOW} in flight`, ...runs, target: 0.85 };
  } finally {
    await app.close();
    await deleteByPrefix(connection, prefix, [queue, exchange]);
    await connection.close();
  }
}

/**
 * Publishes with confirms through the module's `publishNow()` (envelope, size check, confirm channel) and through
 * a raw amqplib confirm channel sending the same envelope, persistent and mandatory, with the same window.
 */
export const publishSuite: Suite = {
  name: 'publish',
  async run() {
    return [await compare('quorum'), await compare('classic')];
  },
};
