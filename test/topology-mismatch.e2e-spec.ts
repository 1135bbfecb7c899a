import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, MessageType } from 'nestjs-reliable-messaging';
import { TopologyMismatchError } from 'nestjs-reliable-messaging/operations';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';

const run = promisify(execFile);

@MessageType({ type: 'stock.reserved', idempotencyKey: (m: StockReserved) => m.sku })
class StockReserved {
  @IsString() sku!: string;
}

const CLASSIC_ALREADY = uniqueQueue('classic-already');
const OTHER_LIMIT = uniqueQueue('other-limit');
const FINE = uniqueQueue('fine');

@Injectable()
class QuorumByDefault {
  @Consume({ queue: CLASSIC_ALREADY })
  async on(_event: StockReserved): Promise<void> {}
}

@Injectable()
class DeliveryLimited {
  @Consume({ queue: OTHER_LIMIT })
  async on(_event: StockReserved): Promise<void> {}
}

@Injectable()
class Fine {
  @Consume({ queue: FINE })
  async on(_event: StockReserved): Promise<void> {}
}

/** Connections the broker still has open under a client-given name (the app's `<name>:consume` and `<name>:publish`). */
async function openConnectionsNamed(name: string): Promise<number> {
  const { stdout } = await run('rabbitmqctl', [
    '-q',
    'list_connections',
    'client_properties',
    '--no-table-headers',
  ]);
  return stdout.split('\n').filter((line) => line.includes(`{"connection_name","${name}:`)).length;
}

/**
 * The arguments the module declares a consumer's queue with, but for the ones a test changes: the broker reports
 * only the first argument that differs, so every other one must match.
 */
function moduleArguments(
  exchange: string,
  queue: string,
  changed: Record<string, unknown>,
): Record<string, unknown> {
  return {
    'x-dead-letter-exchange': `${exchange}.dead-letter`,
    'x-dead-letter-routing-key': queue,
    ...changed,
  };
}

describe('a queue or exchange that exists with other arguments', () => {
  let broker: TestBroker;
  let exchange: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    exchange = broker.name('events');
    broker.track(CLASSIC_ALREADY, `${CLASSIC_ALREADY}.dlq`, OTHER_LIMIT, `${OTHER_LIMIT}.dlq`);
  });

  afterAll(async () => {
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('fails startup with a TopologyMismatchError naming the argument, both values and the fix', async () => {
    await (
      await broker.openChannel()
    ).assertQueue(CLASSIC_ALREADY, {
      durable: true,
      arguments: moduleArguments(exchange, CLASSIC_ALREADY, { 'x-queue-type': 'classic' }),
    });
    const connectionName = `${broker.prefix}.mismatch-1`;

    const started = Date.now();
    const { error, logger } = await MessagingTestApp.startFailing(broker, {
      providers: [QuorumByDefault],
      options: { exchange, connectionName },
    });

    expect(error).toBeInstanceOf(TopologyMismatchError);
    const mismatch = error as TopologyMismatchError;
    expect(mismatch).toMatchObject({
      kind: 'queue',
      entity: CLASSIC_ALREADY,
      argument: 'x-queue-type',
      declared: 'quorum',
      existing: 'classic',
    });
    expect(mismatch.message).toBe(
      `queue '${CLASSIC_ALREADY}' already exists with x-queue-type=classic, but this app declares x-queue-type=quorum. ` +
        `RabbitMQ cannot change x-queue-type in place: either change the consumer's options back to match, ` +
        `or drain the queue, delete it (rabbitmqctl delete_queue ${CLASSIC_ALREADY}) and restart so it is declared anew.`,
    );
    // Not a crash loop: one attempt, a clear failure, and no connection left behind.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(logger.find('warn', /retrying|reconnecting/)).toEqual([]);
    expect(await openConnectionsNamed(connectionName)).toBe(0);
  });

  it('names a differing quorum delivery limit the same way', async () => {
    await (
      await broker.openChannel()
    ).assertQueue(OTHER_LIMIT, {
      durable: true,
      arguments: moduleArguments(exchange, OTHER_LIMIT, {
        'x-queue-type': 'quorum',
        'x-delivery-limit': 20,
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
      }),
    });

    const { error } = await MessagingTestApp.startFailing(broker, {
      providers: [DeliveryLimited],
      options: { exchange, deliveryLimitBackstop: 5 },
    });

    expect(error).toBeInstanceOf(TopologyMismatchError);
    expect(error).toMatchObject({ argument: 'x-delivery-limit', declared: '5', existing: '20' });
  });

  it('names an events exchange of another type', async () => {
    const direct = broker.name('direct-events');
    await (await broker.openChannel()).assertExchange(direct, 'direct', { durable: true });

    const { error } = await MessagingTestApp.startFailing(broker, {
      providers: [Fine],
      options: { exchange: direct },
    });

    expect(error).toBeInstanceOf(TopologyMismatchError);
    expect(error).toMatchObject({
      kind: 'exchange',
      entity: direct,
      argument: 'type',
      declared: 'topic',
      existing: 'direct',
    });
    expect((error as Error).message).toContain(`rabbitmqctl delete_exchange ${direct}`);
  });

  it('starts normally once the queue matches again', async () => {
    await (await broker.openChannel()).deleteQueue(CLASSIC_ALREADY);

    const app = await MessagingTestApp.start(broker, { providers: [QuorumByDefault], options: { exchange } });
    try {
      expect((await (await broker.openChannel()).checkQueue(CLASSIC_ALREADY)).consumerCount).toBe(1);
    } finally {
      await app.close();
    }
  });
});
