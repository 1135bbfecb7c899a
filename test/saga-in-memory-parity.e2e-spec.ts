import { afterAll, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { IsString } from 'class-validator';
import {
  MessageType,
  Saga,
  SagaInstances,
  SagaStep,
  type SagaContext,
  type SagaInstanceView,
} from 'nestjs-reliable-messaging';
import { InboxStats } from 'nestjs-reliable-messaging/operations';
import { MessagingHarness, ReliableMessagingTestingModule } from 'nestjs-reliable-messaging/testing';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'saga-parity.order-placed', idempotencyKey: (m: OrderPlaced) => `placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
}

@MessageType({ type: 'saga-parity.order-paid', idempotencyKey: (m: OrderPaid) => `paid:${m.orderId}` })
class OrderPaid {
  @IsString() orderId!: string;
}

@MessageType({
  type: 'saga-parity.order-noted',
  idempotencyKey: (m: OrderNoted) => `noted:${m.orderId}:${m.note}`,
})
class OrderNoted {
  @IsString() orderId!: string;
  @IsString() note!: string;
}

@MessageType({
  type: 'saga-parity.payment-timed-out',
  idempotencyKey: (m: PaymentTimedOut) => `payment-timed-out:${m.orderId}`,
})
class PaymentTimedOut {
  @IsString() orderId!: string;
}

const PAYMENT_TIMEOUT_MS = 3000;
const SAGA = 'saga-parity';

interface OrderState {
  outcome: 'waiting' | 'paid' | 'cancelled';
  notes: string[];
}

/** The saga both runs use: a timeout asked at the start, cancelled by a payment, notes kept on the state. */
@Saga({
  name: SAGA,
  queuePrefix: uniqueQueue('saga-parity'),
  initialState: (): OrderState => ({ outcome: 'waiting', notes: [] }),
})
class OrderDeadline {
  @SagaStep(OrderPlaced, { correlate: (m) => m.orderId, onMissing: 'start', queueType: 'classic' })
  async onPlaced(event: OrderPlaced, saga: SagaContext<OrderState>): Promise<void> {
    await saga.requestTimeout(Object.assign(new PaymentTimedOut(), { orderId: event.orderId }), {
      delayMs: PAYMENT_TIMEOUT_MS,
    });
  }

  @SagaStep(OrderNoted, { correlate: (m) => m.orderId, onMissing: 'ignore', queueType: 'classic' })
  onNoted(event: OrderNoted, saga: SagaContext<OrderState>): void {
    saga.state.notes.push(event.note);
  }

  @SagaStep(OrderPaid, { correlate: (m) => m.orderId, queueType: 'classic' })
  onPaid(_event: OrderPaid, saga: SagaContext<OrderState>): void {
    saga.state.outcome = 'paid';
    saga.complete();
  }

  @SagaStep(PaymentTimedOut, { correlate: (m) => m.orderId, queueType: 'classic' })
  onTimedOut(_event: PaymentTimedOut, saga: SagaContext<OrderState>): void {
    saga.state.outcome = 'cancelled';
    saga.complete();
  }
}

const placed = (orderId: string) => Object.assign(new OrderPlaced(), { orderId });
const paid = (orderId: string) => Object.assign(new OrderPaid(), { orderId });
const noted = (orderId: string, note: string) => Object.assign(new OrderNoted(), { orderId, note });

/** What both runs must agree on: everything but ids, message ids and times. */
function comparable(instance: SagaInstanceView | undefined) {
  if (!instance) return undefined;
  return {
    status: instance.status,
    version: instance.version,
    state: instance.state,
    pendingTimeouts: instance.pendingTimeouts.length,
    completed: instance.completedAt !== null,
    history: instance.history.map(({ version, messageType, step, outcome }) => ({
      version,
      messageType,
      step,
      outcome,
    })),
  };
}

/**
 * The script both runs play, one message at a time as each is handled: 'late' waits out its timeout, 'paid' is
 * paid in time (its timeout cancelled), then noted again after completing (ignored), 'noted' is noted twice (the
 * second a duplicate) before its timeout, and 'unknown' is noted without an instance (ignored, never started).
 */
interface Script {
  send(message: object): Promise<void>;
  /** Lets the payment timeout pass. */
  passTimeout(): Promise<void>;
}

async function play(script: Script): Promise<void> {
  await script.send(placed('late'));
  await script.send(placed('paid'));
  await script.send(noted('paid', 'gift wrap'));
  await script.send(paid('paid'));
  await script.send(noted('paid', 'after completion'));
  await script.send(placed('noted'));
  await script.send(noted('noted', 'leave at the door'));
  await script.send(noted('noted', 'leave at the door'));
  await script.send(noted('unknown', 'no instance'));
  await script.passTimeout();
}

const KEYS = ['late', 'paid', 'noted', 'unknown'];

describe('one saga class, in memory and on RabbitMQ with PostgreSQL: the same final instances', () => {
  let db: MessagingDatabase | undefined;
  let broker: TestBroker | undefined;
  let app: MessagingTestApp | undefined;

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('ends every instance with the same status, version, state, timeouts and history', async () => {
    // On the real services: each message published, then waited for in the instance's history or the consumer.
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [OrderDeadline],
      options: { dataSource: db.dataSource },
    });
    const instances = app.get(SagaInstances);
    const stats = app.get(InboxStats);
    // Each message leaves an inbox row once handled, a duplicate a count in InboxStats instead.
    const handled = async (): Promise<number> => {
      const [{ n }] = await db!.dataSource.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM rm_inbox`,
      );
      return n + stats.duplicates;
    };
    const real: Script = {
      send: async (message) => {
        const before = await handled();
        await app!.publisher.publishNow(message);
        await waitFor('the message handled', async () => (await handled()) > before);
      },
      passTimeout: () =>
        waitFor('both timeouts handled', async () => {
          const [late, noted] = await Promise.all([
            instances.find(SAGA, 'late'),
            instances.find(SAGA, 'noted'),
          ]);
          return late?.status === 'completed' && noted?.status === 'completed';
        }),
    };
    await play(real);
    const onServices = await Promise.all(
      KEYS.map(async (key) => comparable(await instances.find(SAGA, key))),
    );

    // In memory: the same class on the testing module, the clock moved past the timeout.
    const moduleRef = await Test.createTestingModule({
      imports: [ReliableMessagingTestingModule.forRoot()],
      providers: [OrderDeadline],
    }).compile();
    await moduleRef.init();
    try {
      const harness = moduleRef.get(MessagingHarness);
      await play({
        send: async (message) => {
          await harness.publish(message);
          await harness.settled();
        },
        passTimeout: () => harness.clock.advance(PAYMENT_TIMEOUT_MS + 1_000),
      });
      const inMemory = await Promise.all(
        KEYS.map(async (key) => comparable(await harness.sagas.find(SAGA, key))),
      );

      expect(inMemory).toEqual(onServices);
      expect(onServices).toEqual([
        expect.objectContaining({ status: 'completed', state: { outcome: 'cancelled', notes: [] } }),
        expect.objectContaining({ status: 'completed', state: { outcome: 'paid', notes: ['gift wrap'] } }),
        expect.objectContaining({
          status: 'completed',
          state: { outcome: 'cancelled', notes: ['leave at the door'] },
        }),
        undefined,
      ]);
    } finally {
      await moduleRef.close();
    }
  });
});
