/**
 * Screenshots of the operator console for docs/operations.md (`npm run console:screenshots`): starts a small app
 * with the console on, an outbox in a database of its own (on the PostgreSQL server of `DATABASE_URL`, default
 * the local one) and two consumers that refuse their messages, makes dead letters and parked outbox rows for real
 * on the broker (`AMQP_URL`, default the local one), signs in with Chromium (`CHROMIUM_PATH`, default
 * `/usr/bin/chromium`) at 1280 px wide, writes docs/images/console-*.png, and removes every queue and exchange
 * it declared and its database.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import amqp from 'amqplib';
import { IsInt, IsString, Min } from 'class-validator';
import { DataSource } from 'typeorm';
import { Consume, MessagePublisher, MessageType, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import { DeadLetterAdminModule } from 'nestjs-reliable-messaging-admin';
import {
  DeadLetterMonitor,
  delayLevelNames,
  deliverExchangeName,
  OutboxMonitor,
} from 'nestjs-reliable-messaging/operations';
import {
  RELIABLE_MESSAGING_ENTITIES,
  RELIABLE_MESSAGING_MIGRATIONS,
} from 'nestjs-reliable-messaging/typeorm';
import { ADMIN_ENTITIES, ADMIN_MIGRATIONS } from 'nestjs-reliable-messaging-admin/typeorm';
import { DEFAULT_DATABASE_URL } from '../config/app-config';
import { DemoEnvironment } from './demo-environment';
import { launchChromium } from './headless-chromium';
import { pollUntil } from './poll-until';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const OUT_DIR = resolve('docs/images');
const PREFIX = `demo-console-${randomBytes(3).toString('hex')}`;
const EXCHANGE = `${PREFIX}.events`;
const QUEUES = { payments: `${PREFIX}.payments`, shipping: `${PREFIX}.shipping` };

@MessageType<PaymentRequested>({ type: 'payment.requested', idempotencyKey: (m) => `payment:${m.orderId}` })
class PaymentRequested {
  @IsString() orderId!: string;
  @IsInt() @Min(1) amountCents!: number;
}

@MessageType<ShipmentRequested>({
  type: 'shipment.requested',
  idempotencyKey: (m) => `shipment:${m.orderId}`,
})
class ShipmentRequested {
  @IsString() orderId!: string;
  @IsString() carrier!: string;
}

class PaymentDeclined extends Error {}
class CarrierUnavailable extends Error {}

@Injectable()
class RefusingConsumers {
  @Consume({ queue: QUEUES.payments, queueType: 'classic', retry: { maxAttempts: 1 } })
  async onPayment(message: PaymentRequested): Promise<void> {
    throw new PaymentDeclined(`card declined for order ${message.orderId} (insufficient funds)`);
  }

  @Consume({ queue: QUEUES.shipping, queueType: 'classic', retry: { maxAttempts: 1 } })
  async onShipment(message: ShipmentRequested): Promise<void> {
    throw new CarrierUnavailable(`carrier '${message.carrier}' answered 503 for order ${message.orderId}`);
  }
}

async function main(): Promise<void> {
  const token = randomBytes(24).toString('hex');
  const database = await DemoEnvironment.create(process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const dataSource = new DataSource({
    type: 'postgres',
    url: database.databaseUrl,
    entities: [...RELIABLE_MESSAGING_ENTITIES, ...ADMIN_ENTITIES],
    migrations: [...RELIABLE_MESSAGING_MIGRATIONS, ...ADMIN_MIGRATIONS],
    migrationsRun: true,
    logging: false,
  });

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange: EXCHANGE,
        connectionName: PREFIX,
        dataSource,
        outbox: { pollIntervalMs: 100 },
      }),
      DeadLetterAdminModule.register({ tokens: { ops: token }, console: true }),
    ],
    providers: [RefusingConsumers],
  })
  class ScreenshotModule {}

  await dataSource.initialize();
  const app = await NestFactory.create<INestApplication<Server>>(ScreenshotModule, { logger: ['error'] });
  try {
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/admin/dead-letters/console`;
    const shownId = await makeDeadLetters(app);
    await parkOutboxRows(app, dataSource);

    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      await page.goto(`${base}/sign-in`);
      await page.fill('input[name=token]', token);
      await page.click('button[type=submit]');
      await page.waitForSelector('#dead-letter-queues');
      mkdirSync(OUT_DIR, { recursive: true });
      await page.screenshot({ path: join(OUT_DIR, 'console-overview.png'), fullPage: true });
      await page.goto(`${base}/messages`);
      await page.screenshot({ path: join(OUT_DIR, 'console-dead-letters.png'), fullPage: true });
      await page.goto(
        `${base}/messages/${encodeURIComponent(QUEUES.payments)}/${encodeURIComponent(shownId)}`,
      );
      await page.waitForSelector('#history');
      await page.screenshot({ path: join(OUT_DIR, 'console-message.png'), fullPage: true });
      await page.goto(`${base}/outbox`);
      await page.waitForSelector('#parked-rows');
      await page.screenshot({ path: join(OUT_DIR, 'console-outbox.png'), fullPage: true });
      console.log(
        `wrote console-overview.png, console-dead-letters.png, console-message.png and console-outbox.png to ${OUT_DIR}`,
      );
    } finally {
      await browser.close();
    }
  } finally {
    await app.close();
    await removeBrokerObjects();
    if (dataSource.isInitialized) await dataSource.destroy();
    await database.dropDatabase();
  }
}

/**
 * Outbox rows the broker cannot route (nothing is bound to their types), which the relay parks: a shipment
 * notice and the cancellation of the same order behind it (held back by its ordering key), and an invoice.
 */
async function parkOutboxRows(app: INestApplication, dataSource: DataSource): Promise<void> {
  const publisher = app.get(MessagePublisher);
  await dataSource.transaction(async (manager) => {
    for (const [type, payload, orderingKey] of [
      ['order.shipped', { orderId: 'ord-1004', carrier: 'parcel-express' }, 'order:ord-1004'],
      ['order.cancelled', { orderId: 'ord-1004', reason: 'customer request' }, 'order:ord-1004'],
      ['invoice.issued', { orderId: 'ord-1002', invoice: 'INV-2026-0042' }, undefined],
    ] as const) {
      await publisher.publish(
        { type, payload, idempotencyKey: `${type}:${payload.orderId}` },
        { manager, orderingKey },
      );
    }
  });
  const monitor = app.get(OutboxMonitor);
  const parked = await pollUntil(
    async () => ((await monitor.backlog()).parked === 2 ? true : undefined),
    15_000,
    new AbortController().signal,
  );
  if (!parked) throw new Error('the relay did not park the 2 outbox rows within 15 s');
}

/** Payments declined, shipments refused, and payments that fail validation: three reasons, two queues. */
async function makeDeadLetters(app: INestApplication): Promise<string> {
  const publisher = app.get(MessagePublisher);
  const shown: string[] = [];
  for (let i = 1; i <= 6; i++) {
    const payment = Object.assign(new PaymentRequested(), {
      orderId: `ord-${1000 + i}`,
      amountCents: 1250 * i,
    });
    shown.push((await publisher.publishNow(payment)).messageId);
  }
  for (const orderId of ['ord-2001', 'ord-2002']) {
    const invalid = Object.assign(new PaymentRequested(), { orderId, amountCents: 0 });
    await publisher.publishNow(invalid);
  }
  for (let i = 1; i <= 3; i++) {
    const shipment = Object.assign(new ShipmentRequested(), {
      orderId: `ord-${3000 + i}`,
      carrier: 'parcel-express',
    });
    await publisher.publishNow(shipment);
  }
  const monitor = app.get(DeadLetterMonitor);
  const settled = await pollUntil(
    async () => {
      const stats = await monitor.read(Object.values(QUEUES));
      return stats.reduce((sum, queue) => sum + queue.depth, 0) === 11 ? true : undefined;
    },
    15_000,
    new AbortController().signal,
  );
  if (!settled) throw new Error('the 11 dead letters did not arrive within 15 s');
  return shown[2];
}

async function removeBrokerObjects(): Promise<void> {
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  channel.on('error', () => undefined);
  const delayLevels = delayLevelNames(EXCHANGE);
  for (const queue of [
    ...Object.values(QUEUES).flatMap((queue) => [queue, `${queue}.dlq`]),
    ...delayLevels,
  ]) {
    await channel.deleteQueue(queue);
  }
  for (const exchange of [
    EXCHANGE,
    `${EXCHANGE}.dead-letter`,
    deliverExchangeName(EXCHANGE),
    ...delayLevels,
  ]) {
    await channel.deleteExchange(exchange);
  }
  await connection.close();
}

main().catch((error: unknown) => {
  console.error(`console screenshots failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
