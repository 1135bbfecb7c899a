import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxy, Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { lastValueFrom, of, timeout, TimeoutError, type Observable } from 'rxjs';
import {
  NonRetryableError,
  RemoteHandlerError,
  RequestTimeoutError,
  ReliableMessagingModule,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import {
  ReliableMessagingClient,
  ReliableMessagingMicroservicesModule,
  ReliableMessagingTransport,
} from 'nestjs-reliable-messaging/microservices';
import { ConsumerRegistry } from 'nestjs-reliable-messaging/operations';
import { CapturingLogger } from './support/messaging-app';
import { TestBroker } from './support/test-broker';

/** The client's token in the app, as it was under Nest's RMQ transport. */
const BILLING = 'BILLING';

interface Invoice {
  items: number[];
}

/** A controller written for Nest's RMQ transport: its `@MessagePattern()` handlers answer `send()`. */
@Controller()
class BillingController {
  readonly contexts: string[] = [];
  /** One per `invoice.slow` being handled; calling it lets that handler return. */
  readonly releases: Array<() => void> = [];

  @MessagePattern<string>('invoice.total')
  total(@Payload() invoice: Invoice, @Ctx() ctx: MessageContext): { total: number } {
    this.contexts.push(ctx.queue);
    return { total: invoice.items.reduce((sum, item) => sum + item, 0) };
  }

  @MessagePattern<string>('invoice.lines')
  lines(@Payload() invoice: Invoice): Observable<number> {
    return of(...invoice.items);
  }

  @MessagePattern<string>('invoice.void')
  voidInvoice(): never {
    throw new NonRetryableError('the invoice is already paid');
  }

  @MessagePattern<string>('invoice.slow')
  async slow(): Promise<string> {
    await new Promise<void>((resolve) => this.releases.push(resolve));
    return 'late';
  }
}

describe('@nestjs/microservices bridge: @MessagePattern handlers answer ClientProxy.send()', () => {
  let broker: TestBroker;
  let app: INestApplication;
  let billing: BillingController;
  let client: ClientProxy;
  let appId: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    appId = broker.name('billing');
    const exchange = broker.name('events');
    broker.track(exchange, `${exchange}.dead-letter`);

    @Module({
      imports: [
        ReliableMessagingModule.forRoot({ urls: broker.url, exchange, connectionName: appId }),
        ReliableMessagingMicroservicesModule,
      ],
      controllers: [BillingController],
      providers: [{ provide: BILLING, useExisting: ReliableMessagingClient }],
    })
    class BillingModule {}

    app = await NestFactory.create(BillingModule, { logger: new CapturingLogger(), abortOnError: false });
    app.connectMicroservice({ strategy: app.get(ReliableMessagingTransport) });
    await app.startAllMicroservices();
    await app.init();
    for (const consumer of app.get(ConsumerRegistry).consumers) {
      broker.track(consumer.queue, consumer.deadLetterQueue);
    }
    billing = app.get(BillingController);
    client = app.get<ClientProxy>(BILLING);
  });

  afterAll(async () => {
    for (const release of billing?.releases ?? []) release();
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('gives each @MessagePattern a reply consumer on its own queue', () => {
    const plans = app.get(ConsumerRegistry).consumers.map((c) => [c.queue, c.reply, c.contextType]);
    expect(plans).toEqual(
      ['invoice.total', 'invoice.lines', 'invoice.void', 'invoice.slow'].map((p) => [
        `${appId}.${p}`,
        true,
        'rpc',
      ]),
    );
  });

  it("answers send() with the handler's return value", async () => {
    await expect(lastValueFrom(client.send('invoice.total', { items: [1, 2, 3] }))).resolves.toEqual({
      total: 6,
    });
    expect(billing.contexts).toEqual([`${appId}.invoice.total`]);
  });

  it("answers with the last value of a handler's Observable", async () => {
    await expect(lastValueFrom(client.send('invoice.lines', { items: [4, 5, 6] }))).resolves.toBe(6);
  });

  it("errors send()'s observable with RemoteHandlerError when the handler fails for good", async () => {
    await expect(lastValueFrom(client.send('invoice.void', {}))).rejects.toMatchObject({
      constructor: RemoteHandlerError,
      remoteName: 'NonRetryableError',
      remoteMessage: 'the invoice is already paid',
    });
  });

  it("errors with RequestTimeoutError after the client's send timeout, or rxjs' TimeoutError under timeout()", async () => {
    const quick = (client as ReliableMessagingClient).withSendTimeout(300);
    await expect(lastValueFrom(quick.send('invoice.slow', {}))).rejects.toMatchObject({
      constructor: RequestTimeoutError,
      timeoutMs: 300,
    });
    await expect(lastValueFrom(client.send('invoice.slow', {}).pipe(timeout(300)))).rejects.toBeInstanceOf(
      TimeoutError,
    );
  });
});
