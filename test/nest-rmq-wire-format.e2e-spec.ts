import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { Controller, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  ClientProxyFactory,
  Ctx,
  EventPattern,
  Payload,
  RmqRecordBuilder,
  Transport,
  type ClientProxy,
} from '@nestjs/microservices';
import { IsInt, IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { lastValueFrom } from 'rxjs';
import { ReliableMessagingModule, type MessageContext } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import {
  ReliableMessagingMicroservicesModule,
  ReliableMessagingTransport,
} from 'nestjs-reliable-messaging/microservices';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { installFaultPoints } from 'nestjs-reliable-messaging/testing';
import { CapturingLogger, closeConnectionsNamed, queueCounts } from './support/messaging-app';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

class ParcelWeighed {
  @IsString() parcelId!: string;
  @IsInt() grams!: number;
}

/** Lets a handler run only when the test says so. */
class Gate {
  private opened = false;
  private waiters: Array<() => void> = [];
  pass(): Promise<void> {
    return this.opened ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
  open(): void {
    this.opened = true;
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

const gate = new Gate();

@Controller()
class ShippingController {
  readonly weighed: Array<{ event: ParcelWeighed; messageId: string; attempt: number }> = [];
  readonly lost: string[] = [];

  /** Opted in: reads Nest's {pattern, data} beside the envelope. */
  @EventPattern<string>('parcel.weighed', { accept: ['envelope', 'nest-rmq'] })
  async onWeighed(@Payload() event: ParcelWeighed, @Ctx() ctx: MessageContext): Promise<void> {
    if (event.parcelId.startsWith('gated')) await gate.pass();
    this.weighed.push({ event, messageId: ctx.envelope.messageId, attempt: ctx.attempt });
  }

  /** Not opted in: Nest's format stays refused. */
  @EventPattern<string>('parcel.lost')
  async onLost(@Payload('parcelId') parcelId: string): Promise<void> {
    this.lost.push(parcelId);
  }
}

describe("Nest's RMQ wire format on a bridged queue (accept: ['envelope', 'nest-rmq'])", () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let app: INestApplication;
  let controller: ShippingController;
  let client: ClientProxy;
  let metrics: Registry;
  let exchange: string;
  let weighedQueue: string;
  let lostQueue: string;
  let appId: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase();
    appId = broker.name('shipping');
    exchange = broker.name('events');
    broker.track(exchange, `${exchange}.dead-letter`);
    metrics = new Registry();

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange,
          connectionName: appId,
          dataSource: db.dataSource,
          metricsRegistry: metrics,
          retry: { initialDelayMs: 100 },
          reconnect: { initialDelayMs: 100, maxDelayMs: 500 },
        }),
        ReliableMessagingMicroservicesModule,
      ],
      controllers: [ShippingController],
    })
    class ShippingModule {}

    app = await NestFactory.create(ShippingModule, { logger: new CapturingLogger(), abortOnError: false });
    app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) });
    await app.startAllMicroservices();
    await app.init();
    for (const consumer of app.get(ConsumerRegistry).consumers) {
      broker.track(consumer.queue, consumer.deadLetterQueue);
    }
    controller = app.get(ShippingController);
    weighedQueue = `${appId}.parcel.weighed`;
    lostQueue = `${appId}.parcel.lost`;

    // A producer still on Nest's RMQ transport, its client pointed at the events exchange (docs/migrating.md).
    client = ClientProxyFactory.create({
      transport: Transport.RMQ,
      options: { urls: [broker.url], exchange, wildcards: true, persistent: true },
    });
    await client.connect();
  });

  afterAll(async () => {
    await client?.close();
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
    await db?.drop();
  });

  const emit = (pattern: string, data: unknown) => lastValueFrom(client.emit(pattern, data));

  async function deduplicated(): Promise<number> {
    const metric = await metrics.getSingleMetric('rm_messages_deduplicated_total')?.get();
    return (metric?.values ?? []).reduce((sum, value) => sum + value.value, 0);
  }

  it("handles a ClientProxy.emit() once, and acknowledges it only after the handler's work", async () => {
    await emit('parcel.weighed', { parcelId: 'gated-1', grams: 700 });
    await waitFor('the delivery held unacknowledged by its handler', async () => {
      const counts = await queueCounts(weighedQueue);
      return counts.unacked === 1 && counts.ready === 0;
    });
    expect(controller.weighed).toEqual([]);

    gate.open();
    await waitFor('gated-1 handled', () => controller.weighed.length === 1);
    await waitFor('gated-1 acknowledged', async () => (await queueCounts(weighedQueue)).unacked === 0);

    expect(controller.weighed).toEqual([
      {
        event: Object.assign(new ParcelWeighed(), { parcelId: 'gated-1', grams: 700 }),
        messageId: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        attempt: 1,
      },
    ]);
    expect(controller.weighed[0].event).toBeInstanceOf(ParcelWeighed);
  });

  it('dead-letters the same emit on a consumer that did not opt in, with its reason', async () => {
    await emit('parcel.lost', { parcelId: 'l-1' });
    const [deadLetter] = await broker.waitForMessages(`${lostQueue}.dlq`, 1);

    expect(deadLetter.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'missing-header',
      [DEAD_LETTER_HEADERS.attempts]: 1,
      [DEAD_LETTER_HEADERS.handler]: 'ShippingController.onLost',
    });
    expect(JSON.parse(deadLetter.content.toString())).toEqual({
      pattern: 'parcel.lost',
      data: { parcelId: 'l-1' },
    });
    expect(controller.lost).toEqual([]);
  });

  it.each<[string, string, string, RegExp]>([
    [
      'a pattern other than the consumer’s (published with its routing key)',
      '{"pattern":"parcel.shipped","data":{"parcelId":"w-1","grams":1}}',
      'unknown-message-type',
      /pattern 'parcel\.shipped' is not handled by ShippingController\.onWeighed/,
    ],
    [
      'data failing validation',
      '{"pattern":"parcel.weighed","data":{"parcelId":"w-2","grams":"heavy"}}',
      'validation-failed',
      /grams must be an integer number/,
    ],
    [
      'a __proto__ key in data',
      '{"pattern":"parcel.weighed","data":{"parcelId":"w-3","grams":1,"__proto__":{"admin":true}}}',
      'forbidden-key',
      /forbidden key/,
    ],
    [
      'a body that is not Nest’s packet',
      '{"pattern":"parcel.weighed","data":{"parcelId":"w-4","grams":1},"admin":true}',
      'invalid-wire-format',
      /the key 'admin'/,
    ],
    [
      'a body over maxPayloadBytes',
      JSON.stringify({
        pattern: 'parcel.weighed',
        data: { parcelId: 'w-5', grams: 1, pad: 'x'.repeat(300_000) },
      }),
      'payload-too-large',
      /above the limit of 262144/,
    ],
    ['a body that is not JSON', '{"pattern":"parcel.weighed","data":', 'malformed-json', /not valid JSON/],
  ])('dead-letters %s with its reason at attempt 1, never retried', async (_case, body, reason, error) => {
    const before = controller.weighed.length;
    await broker.publishRaw({ exchange, routingKey: 'parcel.weighed' }, body, { persistent: true });
    const [deadLetter] = await broker.waitForMessages(`${weighedQueue}.dlq`, 1);

    expect(deadLetter.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: reason,
      [DEAD_LETTER_HEADERS.attempts]: 1,
      [DEAD_LETTER_HEADERS.handler]: 'ShippingController.onWeighed',
    });
    expect(String(deadLetter.properties.headers?.[DEAD_LETTER_HEADERS.errorMessage])).toMatch(error);
    expect(deadLetter.content.toString()).toBe(body);
    expect(controller.weighed).toHaveLength(before);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('skips a redelivery of the same Nest message through the inbox: its id is made from its body', async () => {
    const handled = () => controller.weighed.filter((w) => w.event.parcelId === 'r-1');
    const skippedBefore = await deduplicated();
    await emit('parcel.weighed', { parcelId: 'r-1', grams: 5 });
    await waitFor('r-1 handled', () => handled().length === 1);

    await emit('parcel.weighed', { parcelId: 'r-1', grams: 5 });
    await waitFor('the copy skipped', async () => (await deduplicated()) === skippedBefore + 1);

    expect(handled()).toHaveLength(1);
    const rows = await db.dataSource.query<unknown[]>(
      'select message_id from rm_inbox where consumer = $1 and message_id = $2',
      [weighedQueue, handled()[0].messageId],
    );
    expect(rows).toHaveLength(1);
  });

  it('skips a Nest message the broker redelivered after its ack was lost, through the inbox', async () => {
    const data = { parcelId: 'crash-1', grams: 9 };
    // What Nest's client writes, and so the id the module reads it with.
    const body = JSON.stringify({ pattern: 'parcel.weighed', data });
    const id = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    let held = false;
    const remove = installFaultPoints({
      beforeAck: (messageId) => {
        if (held || messageId !== id) return undefined;
        held = true;
        return 'hold';
      },
    });
    try {
      const skippedBefore = await deduplicated();
      await emit('parcel.weighed', data);
      await waitFor('crash-1 handled, its ack held', () => held);
      expect(controller.weighed.filter((w) => w.event.parcelId === 'crash-1')).toHaveLength(1);

      // The process "dies" between commit and ack: the broker takes the delivery back and redelivers it.
      expect(await closeConnectionsNamed(appId)).toBeGreaterThan(0);
      await waitFor('the redelivery skipped', async () => (await deduplicated()) === skippedBefore + 1, {
        timeoutMs: 30_000,
      });
    } finally {
      remove();
    }

    expect(controller.weighed.filter((w) => w.event.parcelId === 'crash-1')).toEqual([
      { event: expect.objectContaining(data), messageId: id, attempt: 1 },
    ]);
  });

  it('handles two emits of the same data as two messages when the producer gives each a message_id', async () => {
    const handled = () => controller.weighed.filter((w) => w.event.parcelId === 'm-1');
    for (const messageId of ['nest-a', 'nest-b']) {
      const record = new RmqRecordBuilder({ parcelId: 'm-1', grams: 5 }).setOptions({ messageId }).build();
      await lastValueFrom(client.emit('parcel.weighed', record));
    }
    await waitFor('both handled', () => handled().length === 2);

    expect(
      handled()
        .map((w) => w.messageId)
        .sort(),
    ).toEqual(['nest-a', 'nest-b']);
  });

  it('still handles the envelope on the opted-in queue', async () => {
    await broker.publishRaw({ exchange, routingKey: 'parcel.weighed' }, '{"parcelId":"e-1","grams":3}', {
      type: 'parcel.weighed',
      messageId: 'envelope-1',
      contentType: 'application/json',
    });
    await waitFor('e-1 handled', () => controller.weighed.some((w) => w.event.parcelId === 'e-1'));
    expect(controller.weighed.find((w) => w.event.parcelId === 'e-1')?.messageId).toBe('envelope-1');
  });
});
