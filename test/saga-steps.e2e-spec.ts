import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsBoolean, IsOptional, IsString } from 'class-validator';
import { DataSource } from 'typeorm';
import {
  MessagePublisher,
  MessageType,
  Saga,
  SagaInstances,
  SagaStep,
  type SagaContext,
} from 'nestjs-reliable-messaging';
import { createMessagingDatabase, outboxRows, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.order-placed', idempotencyKey: (m: OrderPlaced) => `placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
  @IsString() customer!: string;
}

@MessageType({
  type: 'shop.payment-captured',
  idempotencyKey: (m: PaymentCaptured) => `captured:${m.orderId}:${m.attemptTag}`,
})
class PaymentCaptured {
  @IsString() orderId!: string;
  @IsString() attemptTag!: string;
  /** The step publishes, then throws: nothing it did may survive. */
  @IsOptional() @IsBoolean() failAfterPublish?: boolean;
}

@MessageType({ type: 'shop.order-shipped', idempotencyKey: (m: OrderShipped) => `shipped:${m.orderId}` })
class OrderShipped {
  @IsString() orderId!: string;
}

@MessageType({ type: 'shop.ship-order', idempotencyKey: (m: ShipOrder) => `ship:${m.orderId}` })
class ShipOrder {
  @IsString() orderId!: string;
}

const placed = (orderId: string): OrderPlaced =>
  Object.assign(new OrderPlaced(), { orderId, customer: 'ada' });
const captured = (orderId: string, attemptTag = 'a', failAfterPublish = false): PaymentCaptured =>
  Object.assign(new PaymentCaptured(), { orderId, attemptTag, failAfterPublish });
const shipped = (orderId: string): OrderShipped => Object.assign(new OrderShipped(), { orderId });

interface FulfilmentState {
  customer?: string;
  paid: boolean;
  shipped: boolean;
}

const SAGA = uniqueQueue('order-fulfilment');

/** Three steps: placed starts the instance, captured asks for the shipment (outbox), shipped completes it. */
@Saga({ name: SAGA, initialState: (): FulfilmentState => ({ paid: false, shipped: false }) })
class OrderFulfilment {
  readonly runs: string[] = [];

  constructor(private readonly publisher: MessagePublisher) {}

  @SagaStep(OrderPlaced, { correlate: (m) => m.orderId, onMissing: 'start', queueType: 'classic' })
  onPlaced(event: OrderPlaced, saga: SagaContext<FulfilmentState>): void {
    this.runs.push(`placed:${event.orderId}`);
    saga.state.customer = event.customer;
  }

  @SagaStep(PaymentCaptured, {
    correlate: (m) => m.orderId,
    queueType: 'classic',
    retry: { maxAttempts: 1 },
  })
  async onCaptured(event: PaymentCaptured, saga: SagaContext<FulfilmentState>): Promise<void> {
    this.runs.push(`captured:${event.orderId}:${event.attemptTag}`);
    saga.state.paid = true;
    await this.publisher.publish(Object.assign(new ShipOrder(), { orderId: event.orderId }));
    if (event.failAfterPublish) throw new Error('the step fails after publishing');
  }

  @SagaStep(OrderShipped, { correlate: (m) => m.orderId, queueType: 'classic' })
  onShipped(event: OrderShipped, saga: SagaContext<FulfilmentState>): void {
    this.runs.push(`shipped:${event.orderId}`);
    saga.state = { ...saga.state, shipped: true };
    saga.complete();
  }
}

describe('saga steps: an instance started, continued and completed, each step atomic and run once per message', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let saga: OrderFulfilment;
  let instances: SagaInstances;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [OrderFulfilment],
      options: { dataSource: db.dataSource, outbox: { relay: false } },
    });
    saga = app.get(OrderFulfilment);
    instances = app.get(SagaInstances);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  const atVersion = (orderId: string, version: number): Promise<void> =>
    waitFor(`order ${orderId} at version ${version}`, async () => {
      return (await instances.find(SAGA, orderId))?.version === version;
    });

  const shipOrders = async (orderId: string): Promise<number> =>
    (await outboxRows(db.dataSource)).filter(
      (row) => row.type === 'shop.ship-order' && row.body.includes(`"orderId":"${orderId}"`),
    ).length;

  it('starts the instance, continues it with its outbox message in the same transaction, and completes it', async () => {
    await app.publisher.publishNow(placed('o-1'));
    await atVersion('o-1', 1);
    expect(await shipOrders('o-1')).toBe(0);

    await app.publisher.publishNow(captured('o-1'));
    await atVersion('o-1', 2);
    expect(await shipOrders('o-1')).toBe(1);

    await app.publisher.publishNow(shipped('o-1'));
    await atVersion('o-1', 3);

    const instance = await instances.find(SAGA, 'o-1');
    expect(instance).toMatchObject({
      sagaName: SAGA,
      correlationKey: 'o-1',
      status: 'completed',
      version: 3,
      state: { customer: 'ada', paid: true, shipped: true },
      pendingTimeouts: [],
    });
    expect(instance?.completedAt).toBeInstanceOf(Date);
    expect(
      instance?.history.map((entry) => [entry.version, entry.messageType, entry.step, entry.outcome]),
    ).toEqual([
      [1, 'shop.order-placed', 'OrderFulfilment.onPlaced', 'started'],
      [2, 'shop.payment-captured', 'OrderFulfilment.onCaptured', 'continued'],
      [3, 'shop.order-shipped', 'OrderFulfilment.onShipped', 'completed'],
    ]);
  });

  it('leaves no message and no state change when a step throws after publishing', async () => {
    await app.publisher.publishNow(placed('o-2'));
    await atVersion('o-2', 1);
    const captureQueue = `${SAGA}.shop.payment-captured`;

    await app.publisher.publishNow(captured('o-2', 'fails', true));
    await waitFor(
      'the failing capture dead-lettered',
      async () => (await broker.queueDepth(`${captureQueue}.dlq`)) === 1,
    );

    expect(saga.runs).toContain('captured:o-2:fails');
    expect(await shipOrders('o-2')).toBe(0);
    const instance = await instances.find(SAGA, 'o-2');
    expect(instance).toMatchObject({ version: 1, status: 'active', state: { paid: false } });
    expect(instance?.history).toHaveLength(1);
  });

  it('runs a step once for a message delivered twice (the inbox row commits with the state)', async () => {
    await app.publisher.publishNow(placed('o-3'));
    await atVersion('o-3', 1);

    await app.publisher.publishNow(captured('o-3', 'twice'));
    await app.publisher.publishNow(captured('o-3', 'twice'));
    await atVersion('o-3', 2);
    await waitFor('both copies handled', async () => {
      const counts = await queueCounts(`${SAGA}.shop.payment-captured`);
      return counts.ready + counts.unacked === 0;
    });

    expect(saga.runs.filter((run) => run === 'captured:o-3:twice')).toHaveLength(1);
    expect(await shipOrders('o-3')).toBe(1);
    const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM rm_inbox WHERE idempotency_key = 'captured:o-3:twice'`,
    );
    expect(n).toBe(1);
    const instance = await instances.find(SAGA, 'o-3');
    expect(instance?.version).toBe(2);
    expect(instance?.history.map((entry) => entry.outcome)).toEqual(['started', 'continued']);
  });

  it.each([
    ['o-4', 'in a transaction of its own'],
    ['o-5', 'given a manager outside any transaction'],
  ])(
    'reads an instance (%s) and its history in one snapshot, %s, when a step commits between the two reads',
    async (key, how) => {
      await app.publisher.publishNow(placed(key));
      await atVersion(key, 1);
      const step = db.dataSource.createQueryRunner();
      await step.connect();
      try {
        // The history's table is locked until the "step" commits: find() has read the instance and waits for it.
        await step.startTransaction();
        const [{ pid }] = (await step.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
        await step.query('LOCK TABLE rm_saga_history IN ACCESS EXCLUSIVE MODE');
        const manager = how.startsWith('given') ? db.dataSource.manager : undefined;
        const reading = instances.find(SAGA, key, { manager });
        await waitFor('find() waiting for the history', async () => {
          const rows = await db.dataSource.query<unknown[]>(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND $1 = ANY(pg_blocking_pids(pid)) ` +
              `AND query LIKE '%FROM "rm_saga_history" WHERE "saga_id" = $1::bigint%'`,
            [pid],
          );
          return rows.length > 0;
        });
        await step.query(
          `WITH bumped AS (UPDATE rm_saga SET version = version + 1 WHERE saga = $1 AND correlation_key = $2 ` +
            `RETURNING id) DELETE FROM rm_saga_history WHERE saga_id IN (SELECT id FROM bumped)`,
          [SAGA, key],
        );
        await step.commitTransaction();
        const instance = await reading;
        expect([instance?.version, instance?.history.length]).toEqual([1, 1]);
        expect(await instances.find(SAGA, key)).toMatchObject({ version: 2, history: [] });
      } finally {
        if (step.isTransactionActive) await step.rollbackTransaction();
        await step.release();
      }
    },
  );

  it("refuses to read in a transaction of another DataSource than the module's", async () => {
    const other = new DataSource({ type: 'postgres' });
    await expect(instances.find(SAGA, 'o-1', { manager: other.manager })).rejects.toThrow(
      "find(): the manager belongs to another DataSource than the module's dataSource option",
    );
  });

  it('migrates the saga tables to exactly what their entities describe', async () => {
    const pending = await db.dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query).filter((sql) => /rm_saga/.test(sql))).toEqual([]);
  });
});
