import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePublisher } from 'nestjs-reliable-messaging';
import { ReliableMessagingTransport } from 'nestjs-reliable-messaging/microservices';
import { ConsumerRegistry, DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { LabelBook } from '../apps/parcel-service/src/parcel.controller';
import { ParcelModule } from '../apps/parcel-service/src/parcel.module';
import { CapturingLogger } from './support/messaging-app';
import {
  createMessagingDatabase,
  outboxRows,
  waitForOutboxPublished,
  type MessagingDatabase,
} from './support/messaging-database';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/**
 * The parcel service (apps/parcel-service), a controller written for Nest's RMQ transport, wired as its
 * main.ts wires it: the module's transport connected with `connectMicroservice`, its client under the old token.
 */
describe('the parcel service, a Nest RMQ-transport-style app on the bridge', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let app: INestApplication;
  let connectionName: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase();
    connectionName = broker.name('parcels');
    const exchange = broker.name('events');
    broker.track(exchange, `${exchange}.dead-letter`);
    app = await NestFactory.create(
      ParcelModule.forRoot({ amqpUrl: broker.url, dataSource: db.dataSource, exchange, connectionName }),
      { logger: new CapturingLogger(), abortOnError: false },
    );
    app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) });
    await app.startAllMicroservices();
    await app.init();
    for (const consumer of app.get(ConsumerRegistry).consumers) {
      broker.track(consumer.queue, consumer.deadLetterQueue);
    }
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
    await db?.drop();
  });

  function weighed(parcelId: string, grams: number) {
    return app.get(MessagePublisher).publishNow({
      type: 'parcel.weighed',
      payload: { parcelId, grams },
      idempotencyKey: `weighed:${parcelId}`,
    });
  }

  it('labels a parcel: the handler emits through the outbox, and the label is handled once', async () => {
    await weighed('small-1', 800);
    await weighed('big-1', 12_000);
    const labels = app.get(LabelBook).labels;
    await waitFor('both labels', () => labels.length >= 2);

    expect([...labels].sort((a, b) => a.parcelId.localeCompare(b.parcelId))).toEqual([
      { parcelId: 'big-1', carrier: 'freight' },
      { parcelId: 'small-1', carrier: 'post' },
    ]);
    await waitForOutboxPublished(db.dataSource);
    const rows = await outboxRows(db.dataSource);
    expect(rows.map((row) => [row.type, row.status])).toEqual([
      ['parcel.labelled', 'published'],
      ['parcel.labelled', 'published'],
    ]);
  });

  it('retries a parcel no carrier takes three times, then dead-letters it with its reason', async () => {
    await weighed('heavy-1', 40_000);
    const [deadLetter] = await broker.waitForMessages(`${connectionName}.parcel.weighed.dlq`, 1, 20_000);

    expect(deadLetter.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: 3,
      [DEAD_LETTER_HEADERS.errorMessage]: 'no carrier takes 40000 g (attempt 3)',
      [DEAD_LETTER_HEADERS.handler]: 'ParcelController.onWeighed',
    });
    expect(app.get(LabelBook).labels.map((label) => label.parcelId)).not.toContain('heavy-1');
  });
});
