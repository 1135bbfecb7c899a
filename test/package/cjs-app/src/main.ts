import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import * as amqp from 'amqplib';
import { MessagePublisher } from 'nestjs-reliable-messaging';
import {
  ConsumerRegistry,
  InboxStats,
  deliverExchangeName,
  delayLevelNames,
} from 'nestjs-reliable-messaging/operations';
import { HealthCheckService } from '@nestjs/terminus';
import { MessagingHealth } from 'nestjs-reliable-messaging/health';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module';
import { OrderPlaced } from './order-placed';
import { SHIPPING_QUEUE, ShippingHandler } from './shipping.handler';

async function waitFor(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 30_000; !(await condition());) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const queues = app.get(ConsumerRegistry).consumers.flatMap((c) => [c.queue, c.deadLetterQueue]);
  try {
    const dataSource = app.get(DataSource);
    const publisher = app.get(MessagePublisher);
    const order = Object.assign(new OrderPlaced(), { orderId: randomUUID(), totalCents: 4200 });
    // Outbox: the message is written in the transaction; the same event twice is a duplicate the inbox skips.
    for (let copy = 0; copy < 2; copy++) {
      await dataSource.transaction((manager) => publisher.publish(order, { manager }));
    }
    const rolledBack = Object.assign(new OrderPlaced(), { orderId: randomUUID(), totalCents: 1 });
    await dataSource
      .transaction(async (manager) => {
        await publisher.publish(rolledBack, { manager });
        throw new Error('rolled back on purpose');
      })
      .catch(() => undefined);

    const stats = app.get(InboxStats);
    await waitFor('the duplicate skipped by the inbox', () => stats.duplicatesOf(SHIPPING_QUEUE) === 1);
    const handler = app.get(ShippingHandler);
    const count = async (sql: string, ...params: unknown[]) =>
      Number(((await dataSource.query(sql, params)) as { n: string }[])[0]?.n);
    // The relay marks a row published after the broker's confirm, which may come after the consumer ran.
    await waitFor('both outbox rows marked published', async () => {
      return (await count(`SELECT count(*) AS n FROM rm_outbox WHERE status = 'published'`)) === 2;
    });
    const found: Record<string, unknown> = {
      applied: handler.applied,
      shipments: await count('SELECT count(*) AS n FROM shipments WHERE order_id = $1', order.orderId),
      inboxRows: await count(`SELECT count(*) AS n FROM rm_inbox WHERE consumer = $1`, SHIPPING_QUEUE),
      outboxRows: await count('SELECT count(*) AS n FROM rm_outbox'),
      published: await count(`SELECT count(*) AS n FROM rm_outbox WHERE status = 'published'`),
    };
    const readiness = await app.get(HealthCheckService).check(app.get(MessagingHealth).readiness());
    found.ready = readiness.status;
    const expected = { applied: 1, shipments: 1, inboxRows: 1, outboxRows: 2, published: 2, ready: 'ok' };
    if (JSON.stringify(found) !== JSON.stringify(expected)) {
      throw new Error(`expected ${JSON.stringify(expected)}, found ${JSON.stringify(found)}`);
    }
    console.log(
      `cjs-app: order ${order.orderId} published twice through the outbox, applied once (inbox), ` +
        `the rolled-back one never written, readiness ok, in ${Date.now() - started} ms from startup`,
    );
  } finally {
    await app.close();
    await deleteTopology(queues);
  }
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

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
