import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import * as amqp from 'amqplib';
import { MessagePublisher } from 'nestjs-reliable-messaging';
import { ConsumerRegistry, deliverExchangeName, delayLevelNames } from 'nestjs-reliable-messaging/operations';
import { AppModule } from './app.module.js';
import { GreetingSent } from './greeting.js';
import { GreetingHandler } from './greeting.handler.js';

const started = Date.now();
const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
const consumers = app
  .get(ConsumerRegistry)
  .consumers.map((c) => [c.queue, c.deadLetterQueue])
  .flat();
try {
  const id = randomUUID();
  await app.get(MessagePublisher).publish(Object.assign(new GreetingSent(), { id, text: 'hello' }));
  const handler = app.get(GreetingHandler);
  for (const deadline = Date.now() + 20_000; handler.received.length === 0;) {
    if (Date.now() > deadline) throw new Error('the greeting published did not arrive within 20 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const [received] = handler.received;
  if (received?.id !== id || received.text !== 'hello' || handler.received.length !== 1) {
    throw new Error(`expected greeting ${id} once, got ${JSON.stringify(handler.received)}`);
  }
  console.log(`esm-app: published greeting ${id} and consumed it in ${Date.now() - started} ms from startup`);
} finally {
  await app.close();
  await deleteTopology(consumers);
}

/** Deletes what the module declared on the shared broker for this run. */
async function deleteTopology(queues: string[]): Promise<void> {
  const exchange = process.env.EXCHANGE ?? 'events';
  const connection = await amqp.connect(process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
  const channel = await connection.createChannel();
  for (const queue of queues) await channel.deleteQueue(queue);
  for (const name of [
    exchange,
    `${exchange}.dead-letter`,
    ...delayLevelNames(exchange),
    deliverExchangeName(exchange),
  ]) {
    await channel.deleteExchange(name);
  }
  await connection.close();
}
