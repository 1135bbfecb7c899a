import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import './support/migrating-env';
import * as shipping from './fixtures/migrating/nest-shipping-consumer';
import * as nestClient from './fixtures/migrating/nest-warehouse-client-config';
import * as moved from './fixtures/migrating/nest-warehouse-producer';
import * as billing from './fixtures/migrating/golevelup-billing-producer';
import * as receipts from './fixtures/migrating/golevelup-receipts-consumer';
import { CapturingLogger } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'migrating');
/** The "after" code of docs/migrating.md's worked examples, one file per code block. */
const EXAMPLES = [
  'nest-shipping-consumer',
  'nest-warehouse-client-config',
  'nest-warehouse-producer',
  'golevelup-billing-producer',
  'golevelup-receipts-consumer',
];

/** The ```ts blocks of docs/migrating.md, as written. */
function docBlocks(): string[] {
  const doc = readFileSync(join(process.cwd(), 'docs', 'migrating.md'), 'utf8');
  return [...doc.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

describe('docs/migrating.md: the worked examples, run against the real broker', () => {
  let broker: TestBroker;
  const apps: INestApplicationContext[] = [];

  beforeAll(async () => {
    Logger.overrideLogger(new CapturingLogger());
    broker = await TestBroker.connect();
    const prefix = process.env.MESSAGING_PREFIX ?? '';
    broker.track(`${prefix}events`, `${prefix}events.dead-letter`);
  });

  afterAll(async () => {
    for (const app of apps.reverse()) await app.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  /** Closes `app` after the spec, and deletes the queues of its consumers (an app on Nest's client has none). */
  async function track<T extends INestApplicationContext>(app: T, consumers = true): Promise<T> {
    apps.push(app);
    if (!consumers) return app;
    for (const consumer of app.get(ConsumerRegistry).consumers) {
      broker.track(consumer.queue, consumer.deadLetterQueue);
    }
    return app;
  }

  it.each(EXAMPLES)('shows test/fixtures/migrating/%s.ts as a code block, verbatim', (name) => {
    expect(docBlocks()).toContain(readFileSync(join(FIXTURES, `${name}.ts`), 'utf8'));
  });

  it("@nestjs/microservices: the moved consumer handles the events of a producer still on Nest's client, then of the moved producer", async () => {
    const consumer = await track(await shipping.startShipping());
    const printer = consumer.get(shipping.LabelPrinter);

    // Step 2: the producer's ClientRMQ points at the events exchange; its code is unchanged.
    const before = await track(
      await NestFactory.createApplicationContext(nestClient.WarehouseModule, { logger: false }),
      false,
    );
    await before.get(nestClient.WarehouseService).weigh('p-1', 700);
    await waitFor('p-1 printed', () => printer.printed.includes('p-1:700g (attempt 1)'));

    // Step 3: the producer moves to ReliableMessagingClient under the same token.
    const after = await track(
      await NestFactory.createApplicationContext(moved.WarehouseModule, { logger: false }),
    );
    await after.get(moved.WarehouseService).weigh('p-2', 250);
    await waitFor('p-2 printed', () => printer.printed.includes('p-2:250g (attempt 1)'));

    expect(printer.printed).toEqual(['p-1:700g (attempt 1)', 'p-2:250g (attempt 1)']);
  });

  it('golevelup: the moved producer still feeds a @RabbitSubscribe-style consumer, and then the moved @Consume handler', async () => {
    const prefix = process.env.MESSAGING_PREFIX ?? '';
    const producer = await track(
      await NestFactory.createApplicationContext(billing.BillingModule, { logger: false }),
    );

    // What golevelup's @RabbitSubscribe does with a delivery: its queue bound on the exchange by routing key,
    // the body parsed as JSON and handed over, headers and properties unread.
    const legacyQueue = `${prefix}receipts.order-paid`;
    broker.track(legacyQueue);
    const channel = await broker.openChannel();
    await channel.assertQueue(legacyQueue, { durable: true });
    await channel.bindQueue(legacyQueue, `${prefix}events`, 'order.paid');
    const legacy: unknown[] = [];
    await channel.consume(legacyQueue, (message) => {
      if (!message) return;
      legacy.push(JSON.parse(message.content.toString()));
      channel.ack(message);
    });

    await producer.get(billing.BillingService).markPaid('o-1', 1250);
    await waitFor('o-1 reached the golevelup consumer', () => legacy.length === 1);
    expect(legacy).toEqual([{ orderId: 'o-1', amountCents: 1250 }]);

    const consumer = await track(
      await NestFactory.createApplicationContext(receipts.ReceiptsModule, { logger: false }),
    );
    await producer.get(billing.BillingService).markPaid('o-2', 990);
    await waitFor('o-2 handled by @Consume', () => consumer.get(receipts.ReceiptsHandler).sent.length === 1);

    expect(consumer.get(receipts.ReceiptsHandler).sent).toEqual(['o-2 (order-paid:o-2)']);
  });
});
