import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { Consume } from '../../decorators/consume.decorator';
import { MessageType } from '../../decorators/message-type.decorator';
import type { MessageContext } from '../../context/message-context';
import { MessagePublisher } from '../../publishing/message-publisher.service';
import { NonRetryableError } from '../../errors/non-retryable.error';
import { RemoteHandlerError } from '../../errors/remote-handler.error';
import { DEAD_LETTER_HEADERS } from '../../reliable-messaging.constants';
import { ReliableMessagingModule } from '../../reliable-messaging.module';
import { InMemoryBroker, type StoredMessage } from './in-memory-broker';
import { InMemoryConnection } from './in-memory-connection';

@MessageType({ type: 'stock.counted', idempotencyKey: (m: StockCounted) => `stock:${m.sku}` })
class StockCounted {
  @IsString() sku!: string;
}

@Injectable()
class StockHandler {
  readonly attempts: string[] = [];

  @Consume({ queue: 'stock.counted', retry: { maxAttempts: 3, initialDelayMs: 1_000, maxDelayMs: 4_000 } })
  async onCounted(event: StockCounted, ctx: MessageContext): Promise<void> {
    this.attempts.push(`${event.sku}:${ctx.attempt}`);
    if (event.sku.startsWith('broken')) throw new Error(`the count of ${event.sku} does not add up`);
    await Promise.resolve();
  }
}

@MessageType({ type: 'stock.level' })
class StockLevel {
  @IsString() sku!: string;
}

@Injectable()
class StockLevels {
  @Consume({ queue: 'stock.level', reply: true })
  level(request: StockLevel): { sku: string; units: number } {
    if (request.sku === 'retired') throw new NonRetryableError(`sku ${request.sku} is retired`);
    return { sku: request.sku, units: 7 };
  }
}

@MessageType({ type: 'stock.reorder', idempotencyKey: (m: Reorder) => `reorder:${m.sku}` })
class Reorder {
  @IsString() sku!: string;
}

@Injectable()
class Reorders {
  readonly handled: string[] = [];

  @Consume({
    queue: 'stock.reorder',
    lanes: { urgent: {}, bulk: { concurrency: 1 } },
    retry: { maxAttempts: 2, initialDelayMs: 1_000, maxDelayMs: 1_000 },
  })
  async onReorder(event: Reorder, ctx: MessageContext): Promise<void> {
    if (event.sku.startsWith('broken') && ctx.attempt === 1) throw new Error('the supplier is away');
    this.handled.push(`${event.sku}@${ctx.queue}:${ctx.attempt}`);
    await Promise.resolve();
  }
}

/** Waits, on the real clock, until `done` holds; the module's own steps (confirms, acks) take a few ticks. */
async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (done()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The module itself, unchanged, on the in-memory broker: its topology (consumer queues, the delay levels, the
 * dead-letter exchange) routes there as on RabbitMQ, and a retry comes back when the broker's virtual clock
 * passes its delay.
 */
describe('the module on the in-memory broker', () => {
  let broker: InMemoryBroker;
  let app: INestApplicationContext;
  let handler: StockHandler;

  beforeAll(async () => {
    broker = new InMemoryBroker();
    @Module({
      imports: [
        ReliableMessagingModule.forRoot({
          urls: 'amqp://in-memory',
          brokerConnector: () => Promise.resolve(new InMemoryConnection(broker) as unknown as ChannelModel),
          metricsRegistry: new Registry(),
        }),
      ],
      providers: [StockHandler, StockLevels, Reorders],
    })
    class StockModule {}
    app = await NestFactory.createApplicationContext(StockModule, { logger: false });
    handler = app.get(StockHandler);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('delivers a published message to its consumer and acknowledges it', async () => {
    await app.get(MessagePublisher).publish(Object.assign(new StockCounted(), { sku: 'ok-1' }));
    await until('ok-1 handled', () => handler.attempts.includes('ok-1:1'));
    await until('the queue to be empty', () => broker.checkQueue('stock.counted').messageCount === 0);
  });

  it('holds a retry in the delay levels until the clock passes its delay, then dead-letters the last attempt', async () => {
    await app.get(MessagePublisher).publish(Object.assign(new StockCounted(), { sku: 'broken-1' }));
    await until('the first attempt', () => handler.attempts.includes('broken-1:1'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(handler.attempts.filter((a) => a.startsWith('broken-1'))).toEqual(['broken-1:1']);

    broker.advance(5_000);
    await until('the second attempt', () => handler.attempts.includes('broken-1:2'));
    broker.advance(5_000);
    await until('the dead letter', () => broker.checkQueue('stock.counted.dlq').messageCount === 1);

    expect(handler.attempts.filter((a) => a.startsWith('broken-1'))).toEqual([
      'broken-1:1',
      'broken-1:2',
      'broken-1:3',
    ]);
    const dead = broker.take('stock.counted.dlq') as StoredMessage;
    expect(dead.properties.headers).toMatchObject({
      [DEAD_LETTER_HEADERS.reason]: 'attempts-exhausted',
      [DEAD_LETTER_HEADERS.attempts]: 3,
      [DEAD_LETTER_HEADERS.errorMessage]: 'the count of broken-1 does not add up',
    });
  });

  it("answers a request over direct reply-to with the reply consumer's return value, or its error", async () => {
    const publisher = app.get(MessagePublisher);
    const level = (sku: string) => Object.assign(new StockLevel(), { sku });

    await expect(publisher.request(level('sku-1'), { timeoutMs: 2_000 })).resolves.toEqual({
      sku: 'sku-1',
      units: 7,
    });
    await expect(publisher.request(level('retired'), { timeoutMs: 2_000 })).rejects.toEqual(
      new RemoteHandlerError('stock.level', 'NonRetryableError', 'sku retired is retired'),
    );
  });

  it('routes by lane, takes a message without one on the default lane, and retries a bulk message on the bulk lane', async () => {
    const publisher = app.get(MessagePublisher);
    const reorders = app.get(Reorders);
    const reorder = (sku: string) => Object.assign(new Reorder(), { sku });

    await publisher.publish(reorder('a'), { lane: 'bulk' });
    await publisher.publish(reorder('b'));
    await publisher.publish(reorder('broken'), { lane: 'bulk' });
    // The clock moves on at every look, so the retry comes back whenever it reached its delay level.
    await until('the retry handled', () => {
      broker.advance(2_000);
      return reorders.handled.length === 3;
    });

    expect(reorders.handled.sort()).toEqual([
      'a@stock.reorder.bulk:1',
      'b@stock.reorder.urgent:1',
      'broken@stock.reorder.bulk:2',
    ]);
  });
});
