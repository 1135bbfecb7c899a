import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  Controller,
  Inject,
  Module,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxy, Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { type MessageContext, MessagePublisher, ReliableMessagingModule } from 'nestjs-reliable-messaging';
import {
  ReliableMessagingClient,
  ReliableMessagingMicroservicesModule,
  ReliableMessagingTransport,
} from 'nestjs-reliable-messaging/microservices';
import { ConsumerRegistry, DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { CapturingLogger } from './support/messaging-app';
import {
  createMessagingDatabase,
  outboxRows,
  waitForOutboxPublished,
  type MessagingDatabase,
} from './support/messaging-database';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** The client's token in the app, as it was under Nest's RMQ transport. */
const SHIPPING = 'SHIPPING';

interface ParcelEvent {
  parcelId: string;
}

const seen: string[] = [];

/** Records the context type its handlers run under. */
class RecordingGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    seen.push(`guard:${context.getType()}:${context.switchToRpc().getData<ParcelEvent>().parcelId}`);
    return true;
  }
}

/**
 * A controller written for Nest's RMQ transport, unchanged but for its client's provider: it handles
 * `parcel.weighed` by emitting `parcel.shipped`, and fails on its first attempt for a parcel whose id says so,
 * after the emit, so that attempt's transaction rolls back with its event.
 */
// NOTE: `@EventPattern<string>(...)`: with a plain string, Nest 12's typings pick the overload that types every
// parameter after the payload as `unknown`, which a typed `@Ctx()` parameter does not accept.
@Controller()
@UseGuards(RecordingGuard)
class ShippingController {
  readonly shipped: Array<{ parcelId: string; attempt: number }> = [];
  readonly lostAttempts: number[] = [];

  constructor(@Inject(SHIPPING) private readonly client: ClientProxy) {}

  @EventPattern<string>('parcel.weighed')
  async onWeighed(@Payload() event: ParcelEvent, @Ctx() ctx: MessageContext): Promise<void> {
    await lastValueFrom(this.client.emit('parcel.shipped', { parcelId: event.parcelId }));
    if (event.parcelId.startsWith('flaky') && ctx.attempt === 1) throw new Error('the label printer jammed');
  }

  @EventPattern<string>('parcel.shipped')
  async onShipped(@Payload('parcelId') parcelId: string, @Ctx() ctx: MessageContext): Promise<void> {
    this.shipped.push({ parcelId, attempt: ctx.attempt });
  }

  @EventPattern<string>('parcel.lost', { retry: { maxAttempts: 2, initialDelayMs: 100 } })
  async onLost(@Ctx() ctx: MessageContext): Promise<void> {
    this.lostAttempts.push(ctx.attempt);
    throw new Error('the parcel cannot be found');
  }
}

describe('@nestjs/microservices bridge: @EventPattern handlers and ClientProxy.emit() on the reliability pipeline', () => {
  let broker: TestBroker;
  let db: MessagingDatabase;
  let app: INestApplication;
  let controller: ShippingController;
  let appId: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    db = await createMessagingDatabase();
    appId = broker.name('shipping');
    const exchange = broker.name('events');
    broker.track(exchange, `${exchange}.dead-letter`);

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: broker.url,
          exchange,
          connectionName: appId,
          dataSource: db.dataSource,
          outbox: { pollIntervalMs: 200 },
          retry: { initialDelayMs: 100 },
        }),
        ReliableMessagingMicroservicesModule,
      ],
      controllers: [ShippingController],
      providers: [{ provide: SHIPPING, useExisting: ReliableMessagingClient }],
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
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
    await db?.drop();
  });

  function weighed(parcelId: string, type = 'parcel.weighed') {
    return app
      .get(MessagePublisher)
      .publishNow({ type, payload: { parcelId }, idempotencyKey: `${type}:${parcelId}` });
  }

  it('gives each @EventPattern its own durable queue, named after the app and the pattern', () => {
    const queues = app.get(ConsumerRegistry).consumers.map((consumer) => [consumer.queue, consumer.bindings]);
    expect(queues).toEqual([
      [`${appId}.parcel.weighed`, ['parcel.weighed']],
      [`${appId}.parcel.shipped`, ['parcel.shipped']],
      [`${appId}.parcel.lost`, ['parcel.lost']],
    ]);
  });

  it('refuses the transport connected after the app started, whose patterns would have no queue', () => {
    expect(() => app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) })).toThrow(
      /ReliableMessagingTransport was connected after the app started, so @EventPattern\("parcel\.weighed"\) would have no queue/,
    );
  });

  it("runs the handler in the rpc context, and its emit() goes through the outbox in the handler's transaction", async () => {
    await weighed('p-1');
    await waitFor('p-1 shipped', () => controller.shipped.some((s) => s.parcelId === 'p-1'));

    expect(seen).toContain('guard:rpc:p-1');
    await waitForOutboxPublished(db.dataSource, (row) => row.body.includes('"p-1"'));
    const rows = (await outboxRows(db.dataSource)).filter((row) => row.body.includes('"p-1"'));
    expect(rows.map((row) => [row.type, row.status])).toEqual([['parcel.shipped', 'published']]);
  });

  it('rolls the emitted event back with the attempt that failed: the retry emits it once more, and it is handled once', async () => {
    await weighed('flaky-1');
    await waitFor('flaky-1 shipped', () => controller.shipped.some((s) => s.parcelId === 'flaky-1'));
    await waitForOutboxPublished(db.dataSource);

    expect(controller.shipped.filter((s) => s.parcelId === 'flaky-1')).toEqual([
      { parcelId: 'flaky-1', attempt: 1 },
    ]);
    const rows = (await outboxRows(db.dataSource)).filter((row) => row.body.includes('"flaky-1"'));
    expect(rows).toHaveLength(1);
  });

  it("retries a failing handler with its pattern's own retry options, then dead-letters it with its reason", async () => {
    await weighed('l-1', 'parcel.lost');
    const [deadLetter] = await broker.waitForMessages(`${appId}.parcel.lost.dlq`, 1, 20_000);

    expect(deadLetter.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: 2,
      [DEAD_LETTER_HEADERS.errorMessage]: 'the parcel cannot be found',
      [DEAD_LETTER_HEADERS.handler]: 'ShippingController.onLost',
    });
    expect(controller.lostAttempts).toEqual([1, 2]);
  });
});
