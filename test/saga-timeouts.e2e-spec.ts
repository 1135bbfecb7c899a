import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsString } from 'class-validator';
import { MessageType, Saga, SagaInstances, SagaStep, type SagaContext } from 'nestjs-reliable-messaging';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.order-placed', idempotencyKey: (m: OrderPlaced) => `placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
}

@MessageType({ type: 'shop.order-paid', idempotencyKey: (m: OrderPaid) => `paid:${m.orderId}` })
class OrderPaid {
  @IsString() orderId!: string;
}

/** The payment is on its way (authorised, not yet captured): the order no longer waits for it to time out. */
@MessageType({
  type: 'shop.payment-authorised',
  idempotencyKey: (m: PaymentAuthorised) => `authorised:${m.orderId}:${m.tag}`,
})
class PaymentAuthorised {
  @IsString() orderId!: string;
  @IsString() tag!: string;
}

/** The timeout: the payment did not come in time. */
@MessageType({
  type: 'shop.payment-timed-out',
  idempotencyKey: (m: PaymentTimedOut) => `payment-timed-out:${m.orderId}`,
})
class PaymentTimedOut {
  @IsString() orderId!: string;
}

const placed = (orderId: string): OrderPlaced => Object.assign(new OrderPlaced(), { orderId });
const paid = (orderId: string): OrderPaid => Object.assign(new OrderPaid(), { orderId });

/** How long an order waits for its payment. */
const PAYMENT_TIMEOUT_MS = 1500;

interface PaymentState {
  outcome: 'waiting' | 'authorised' | 'paid' | 'cancelled';
  timeoutId?: string;
}

const SAGA = uniqueQueue('payment-deadline');

/** Placed asks for a timeout; paid completes the instance (which cancels it); the timeout cancels the order. */
@Saga({ name: SAGA, initialState: (): PaymentState => ({ outcome: 'waiting' }) })
class PaymentDeadline {
  readonly timedOut: string[] = [];
  /** What each authorisation's cancelTimeout() returned. */
  readonly cancels: Array<[string, boolean]> = [];

  @SagaStep(OrderPlaced, { correlate: (m) => m.orderId, onMissing: 'start', queueType: 'classic' })
  async onPlaced(event: OrderPlaced, saga: SagaContext<PaymentState>): Promise<void> {
    saga.state.timeoutId = await saga.requestTimeout(
      Object.assign(new PaymentTimedOut(), { orderId: event.orderId }),
      { delayMs: PAYMENT_TIMEOUT_MS },
    );
  }

  @SagaStep(PaymentAuthorised, { correlate: (m) => m.orderId, queueType: 'classic' })
  onAuthorised(event: PaymentAuthorised, saga: SagaContext<PaymentState>): void {
    saga.state.outcome = 'authorised';
    this.cancels.push([event.tag, saga.cancelTimeout(saga.state.timeoutId ?? '')]);
  }

  @SagaStep(OrderPaid, { correlate: (m) => m.orderId, queueType: 'classic' })
  onPaid(_event: OrderPaid, saga: SagaContext<PaymentState>): void {
    saga.state.outcome = 'paid';
    saga.complete();
  }

  @SagaStep(PaymentTimedOut, { correlate: (m) => m.orderId, queueType: 'classic' })
  onTimedOut(event: PaymentTimedOut, saga: SagaContext<PaymentState>): void {
    this.timedOut.push(event.orderId);
    saga.state.outcome = 'cancelled';
    saga.complete();
  }
}

describe('saga timeouts: scheduled messages an instance waits for, cancelled when it completes first', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let saga: PaymentDeadline;
  let instances: SagaInstances;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [PaymentDeadline],
      options: { dataSource: db.dataSource },
    });
    saga = app.get(PaymentDeadline);
    instances = app.get(SagaInstances);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  const scheduledRows = async (): Promise<number> => {
    const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM rm_scheduled`,
    );
    return n;
  };

  it('fires the timeout when the payment does not come, and the instance completes cancelled', async () => {
    await app.publisher.publishNow(placed('late'));
    await waitFor('the instance waiting for its timeout', async () => {
      const instance = await instances.find(SAGA, 'late');
      return instance?.version === 1 && instance.pendingTimeouts.length === 1;
    });
    const [timeout] = (await instances.find(SAGA, 'late'))!.pendingTimeouts;
    expect(Date.parse(timeout.dueAt)).toBeGreaterThan(Date.now());

    await waitFor(
      'the timeout handled',
      async () => (await instances.find(SAGA, 'late'))?.status === 'completed',
    );

    expect(saga.timedOut).toEqual(['late']);
    const instance = await instances.find(SAGA, 'late');
    expect(instance).toMatchObject({ state: { outcome: 'cancelled' }, pendingTimeouts: [] });
    expect(instance?.history.map((entry) => [entry.messageType, entry.outcome])).toEqual([
      ['shop.order-placed', 'started'],
      ['shop.payment-timed-out', 'completed'],
    ]);
  });

  it('cancels the timeout in the step that completes the instance, so it never arrives', async () => {
    await app.publisher.publishNow(placed('on-time'));
    await waitFor(
      'the timeout scheduled',
      async () => (await instances.find(SAGA, 'on-time'))?.pendingTimeouts.length === 1,
    );
    const [timeout] = (await instances.find(SAGA, 'on-time'))!.pendingTimeouts;

    await app.publisher.publishNow(paid('on-time'));
    await waitFor(
      'the instance paid',
      async () => (await instances.find(SAGA, 'on-time'))?.status === 'completed',
    );

    const instance = await instances.find(SAGA, 'on-time');
    expect(instance).toMatchObject({ state: { outcome: 'paid' }, pendingTimeouts: [] });
    // The scheduled row went with the completing step's commit: nothing left to promote, nothing in the outbox.
    expect(await scheduledRows()).toBe(0);
    const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM rm_outbox WHERE message_id = $1`,
      [timeout.messageId],
    );
    expect(n).toBe(0);
    // A later order's timeout, due after the cancelled one would have been, fires: the cancelled one did not.
    await app.publisher.publishNow(placed('sentinel'));
    await waitFor(
      "the sentinel's timeout handled",
      async () => (await instances.find(SAGA, 'sentinel'))?.status === 'completed',
    );
    expect(saga.timedOut).toEqual(['late', 'sentinel']);
  });

  it('cancels one timeout in a step that leaves the instance active, so it never arrives', async () => {
    await app.publisher.publishNow(placed('authorised'));
    await waitFor(
      'the timeout scheduled',
      async () => (await instances.find(SAGA, 'authorised'))?.pendingTimeouts.length === 1,
    );
    const [timeout] = (await instances.find(SAGA, 'authorised'))!.pendingTimeouts;
    const authorised = (tag: string): PaymentAuthorised =>
      Object.assign(new PaymentAuthorised(), { orderId: 'authorised', tag });

    await app.publisher.publishNow(authorised('first'));
    await waitFor('the authorisation handled', async () => saga.cancels.length === 1);
    await waitFor(
      'the instance at version 2',
      async () => (await instances.find(SAGA, 'authorised'))?.version === 2,
    );
    expect(await instances.find(SAGA, 'authorised')).toMatchObject({
      status: 'active',
      state: { outcome: 'authorised' },
      pendingTimeouts: [],
    });
    const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(
      `SELECT (SELECT count(*) FROM rm_scheduled WHERE message_id = $1) + ` +
        `(SELECT count(*) FROM rm_outbox WHERE message_id = $1) AS n`,
      [timeout.messageId],
    );
    expect(Number(n)).toBe(0);

    // A second cancel of the same timeout finds nothing to cancel.
    await app.publisher.publishNow(authorised('second'));
    await waitFor('the second authorisation handled', async () => saga.cancels.length === 2);
    expect(saga.cancels).toEqual([
      ['first', true],
      ['second', false],
    ]);

    // A later order's timeout, due after the cancelled one would have been, fires: the cancelled one did not.
    await app.publisher.publishNow(placed('sentinel-2'));
    await waitFor("the second sentinel's timeout handled", async () => saga.timedOut.includes('sentinel-2'));
    expect(saga.timedOut).not.toContain('authorised');
    expect((await instances.find(SAGA, 'authorised'))?.status).toBe('active');
  });
});
