/**
 * Screenshots of the operator console for docs/operations.md (`npm run console:screenshots`): starts a small app
 * with the console on and two consumers that refuse their messages, makes dead letters for real on the broker
 * (`AMQP_URL`, default the local one), signs in with Chromium (`CHROMIUM_PATH`, default `/usr/bin/chromium`) at
 * 1280 px wide, writes docs/images/console-*.png, and removes every queue and exchange it declared.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import amqp from 'amqplib';
import { IsInt, IsString, Min } from 'class-validator';
import { chromium } from 'playwright-core';
import { Consume, MessagePublisher, MessageType, ReliableMessagingModule } from '@app/reliable-messaging';
import { DeadLetterAdminModule } from '@app/reliable-messaging/dead-letters';
import { DeadLetterMonitor, delayLevelNames, deliverExchangeName } from '@app/reliable-messaging/operations';
import { pollUntil } from './poll-until';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
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
  const auditDir = mkdtempSync(join(tmpdir(), 'console-screenshots-'));

  @Module({
    imports: [
      ReliableMessagingModule.forRoot({
        urls: AMQP_URL,
        exchange: EXCHANGE,
        connectionName: PREFIX,
        deadLetterAuditFile: join(auditDir, 'audit.jsonl'),
      }),
      DeadLetterAdminModule.register({ tokens: { ops: token }, console: true }),
    ],
    providers: [RefusingConsumers],
  })
  class ScreenshotModule {}

  const app = await NestFactory.create<INestApplication<Server>>(ScreenshotModule, { logger: ['error'] });
  const profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  try {
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/admin/dead-letters/console`;
    const shownId = await makeDeadLetters(app);

    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      viewport: { width: 1280, height: 800 },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
      ],
    });
    try {
      const page = await context.newPage();
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
      console.log(
        `wrote console-overview.png, console-dead-letters.png and console-message.png to ${OUT_DIR}`,
      );
    } finally {
      await context.close();
    }
  } finally {
    await app.close();
    await removeBrokerObjects();
    rmSync(profile, { recursive: true, force: true });
    rmSync(auditDir, { recursive: true, force: true });
  }
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
