import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { IsString } from 'class-validator';
import { Consume } from '../decorators/consume.decorator';
import { MessageType } from '../decorators/message-type.decorator';
import { MessagePublisher } from '../publishing/message-publisher.service';
import { Saga } from '../saga/saga.decorator';
import { SagaStep } from '../saga/saga-step.decorator';
import type { SagaContext } from '../saga/saga-context';
import { MessagingHarness } from './messaging-harness';
import { ReliableMessagingTestingModule } from './reliable-messaging-testing.module';

@MessageType({ type: 'checkout.placed', idempotencyKey: (m: Placed) => `placed:${m.orderId}` })
class Placed {
  @IsString() orderId!: string;
}

@MessageType({ type: 'checkout.paid', idempotencyKey: (m: Paid) => `paid:${m.orderId}` })
class Paid {
  @IsString() orderId!: string;
}

@MessageType({ type: 'checkout.noted', idempotencyKey: (m: Noted) => `noted:${m.orderId}` })
class Noted {
  @IsString() orderId!: string;
}

@MessageType({ type: 'checkout.authorised', idempotencyKey: (m: Authorised) => `authorised:${m.orderId}` })
class Authorised {
  @IsString() orderId!: string;
}

@MessageType({
  type: 'checkout.payment-timed-out',
  idempotencyKey: (m: TimedOut) => `timed-out:${m.orderId}`,
})
class TimedOut {
  @IsString() orderId!: string;
}

@MessageType({
  type: 'checkout.reminder',
  idempotencyKey: (m: Reminder) => `reminder:${m.orderId}:${m.label}`,
})
class Reminder {
  @IsString() orderId!: string;
  @IsString() label!: string;
}

const of = <T extends object>(type: new () => T, fields: Partial<T>): T => Object.assign(new type(), fields);

const PAYMENT_TIMEOUT_MS = 60_000;

interface CheckoutState {
  outcome: 'waiting' | 'paid' | 'cancelled';
  notes: number;
}

/** Placed waits a minute for the payment; paid completes it first, or the timeout cancels the order. */
@Saga({ name: 'checkout', initialState: (): CheckoutState => ({ outcome: 'waiting', notes: 0 }) })
class Checkout {
  readonly timedOut: string[] = [];
  failPlacedAfterTimeout = 0;
  failAuthorisedAfterCancel = 0;

  @SagaStep(Placed, { correlate: (m) => m.orderId, onMissing: 'start' })
  async onPlaced(event: Placed, saga: SagaContext<CheckoutState>): Promise<void> {
    await saga.requestTimeout(of(TimedOut, { orderId: event.orderId }), { delayMs: PAYMENT_TIMEOUT_MS });
    if (this.failPlacedAfterTimeout > 0) {
      this.failPlacedAfterTimeout--;
      throw new Error('the order store is unavailable');
    }
  }

  @SagaStep(Paid, { correlate: (m) => m.orderId })
  onPaid(_event: Paid, saga: SagaContext<CheckoutState>): void {
    saga.state.outcome = 'paid';
    saga.complete();
  }

  /** The payment is on its way: the order stops waiting for its timeout, and stays active. */
  @SagaStep(Authorised, { correlate: (m) => m.orderId })
  async onAuthorised(event: Authorised, saga: SagaContext<CheckoutState>): Promise<void> {
    // A second timeout, asked for and cancelled in this same step: both go, walking the list as it shrinks.
    await saga.requestTimeout(of(TimedOut, { orderId: event.orderId }), { delayMs: 2 * PAYMENT_TIMEOUT_MS });
    for (const { messageId } of saga.pendingTimeouts) saga.cancelTimeout(messageId);
    if (this.failAuthorisedAfterCancel > 0) {
      this.failAuthorisedAfterCancel--;
      throw new Error('the payment store is unavailable');
    }
  }

  @SagaStep(Noted, { correlate: (m) => m.orderId, onMissing: 'ignore', onCompleted: 'dead-letter' })
  onNoted(_event: Noted, saga: SagaContext<CheckoutState>): void {
    saga.state.notes++;
  }

  @SagaStep(TimedOut, { correlate: (m) => m.orderId })
  onTimedOut(event: TimedOut, saga: SagaContext<CheckoutState>): void {
    this.timedOut.push(event.orderId);
    saga.state.outcome = 'cancelled';
    saga.complete();
  }
}

/** An ordinary handler scheduling plain publishes: each reminder a delay after its order. */
@Injectable()
class Reminders {
  readonly received: string[] = [];

  constructor(private readonly publisher: MessagePublisher) {}

  @Consume({ queue: 'reminders.noted' })
  async onNoted(event: Noted): Promise<void> {
    await this.publisher.publish(of(Reminder, { orderId: event.orderId, label: 'late' }), {
      delayMs: 30_000,
    });
    await this.publisher.publish(of(Reminder, { orderId: event.orderId, label: 'early' }), {
      delayMs: 10_000,
    });
  }

  @Consume({ queue: 'reminders.sent' })
  onReminder(reminder: Reminder): void {
    this.received.push(reminder.label);
  }
}

const queue = (type: string) => `checkout.checkout.${type}`;

describe('sagas on the testing module without a database: instances in memory, timeouts on the harness clock', () => {
  let moduleRef: TestingModule;
  let harness: MessagingHarness;
  let checkout: Checkout;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReliableMessagingTestingModule.forRoot()],
      providers: [Checkout],
    }).compile();
    await moduleRef.init();
    harness = moduleRef.get(MessagingHarness);
    checkout = moduleRef.get(Checkout);
  });

  afterAll(async () => {
    await moduleRef?.close();
  });

  beforeEach(() => {
    harness.reset();
    checkout.timedOut.length = 0;
  });

  const timeoutsConsumed = () =>
    harness.consumed.filter((record) => record.queue === queue('payment-timed-out'));

  it('fires nothing before the timeout is due, then runs the timeout step, which completes the instance', async () => {
    expect(await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-late' }))).toEqual({
      kind: 'acked',
    });
    const waiting = await harness.sagas.find('checkout', 'o-late');
    expect(waiting).toMatchObject({ status: 'active', version: 1, state: { outcome: 'waiting' } });
    expect(waiting?.pendingTimeouts).toHaveLength(1);

    await harness.clock.advance(PAYMENT_TIMEOUT_MS - 1_000);
    expect(timeoutsConsumed()).toHaveLength(0);
    expect(await harness.sagas.find('checkout', 'o-late')).toMatchObject({ status: 'active', version: 1 });

    await harness.clock.advance(2_000);
    expect(checkout.timedOut).toEqual(['o-late']);
    const done = await harness.sagas.find('checkout', 'o-late');
    expect(done).toMatchObject({
      status: 'completed',
      version: 2,
      state: { outcome: 'cancelled' },
      pendingTimeouts: [],
    });
    expect(done?.history.map((entry) => [entry.messageType, entry.outcome])).toEqual([
      ['checkout.placed', 'started'],
      ['checkout.payment-timed-out', 'completed'],
    ]);
    // The timeout went out as the app's own publish, and the harness saw it.
    expect(harness.published.filter((record) => record.type === 'checkout.payment-timed-out')).toHaveLength(
      1,
    );
  });

  it('cancels the timeout of an instance a payment completed first: advancing past it delivers nothing', async () => {
    await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-paid' }));
    expect(await harness.deliver(queue('paid'), of(Paid, { orderId: 'o-paid' }))).toEqual({ kind: 'acked' });
    expect(await harness.sagas.find('checkout', 'o-paid')).toMatchObject({
      status: 'completed',
      state: { outcome: 'paid' },
      pendingTimeouts: [],
    });

    await harness.clock.advance(PAYMENT_TIMEOUT_MS * 2);

    expect(timeoutsConsumed()).toHaveLength(0);
    expect(checkout.timedOut).toEqual([]);
    expect(harness.published.filter((record) => record.type === 'checkout.payment-timed-out')).toHaveLength(
      0,
    );
  });

  it('cancels one timeout from a step that leaves the instance active, once that step has succeeded', async () => {
    checkout.failAuthorisedAfterCancel = 1;
    await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-authorised' }));
    const failed = await harness.deliver(queue('authorised'), of(Authorised, { orderId: 'o-authorised' }));
    expect(failed).toMatchObject({ kind: 'retried', nextAttempt: 2 });
    // The failed run's cancel is undone with the rest of it: the instance still waits.
    expect((await harness.sagas.find('checkout', 'o-authorised'))?.pendingTimeouts).toHaveLength(1);

    await harness.clock.advance(failed.kind === 'retried' ? failed.delayMs : 0);
    expect(await harness.sagas.find('checkout', 'o-authorised')).toMatchObject({
      status: 'active',
      version: 2,
      pendingTimeouts: [],
    });
    await harness.clock.advance(PAYMENT_TIMEOUT_MS * 3);
    expect(timeoutsConsumed()).toHaveLength(0);
    expect(checkout.timedOut).toEqual([]);
  });

  it('counts a timeout’s delay from the test’s time once the clock has moved, not from the app’s', async () => {
    await harness.clock.advance(10 * PAYMENT_TIMEOUT_MS);
    const placedAt = harness.clock.now().getTime();
    await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-moved' }));
    const [timeout] = (await harness.sagas.find('checkout', 'o-moved'))!.pendingTimeouts;
    expect(Date.parse(timeout.dueAt) - placedAt).toBeGreaterThanOrEqual(PAYMENT_TIMEOUT_MS);

    await harness.clock.advance(PAYMENT_TIMEOUT_MS - 1_000);
    expect(timeoutsConsumed()).toHaveLength(0);
    await harness.clock.advance(2_000);
    expect(checkout.timedOut).toEqual(['o-moved']);
  });

  it('handles a duplicate of a message once: one version, one timeout', async () => {
    expect(await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-dup' }))).toEqual({
      kind: 'acked',
    });
    expect(await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-dup' }))).toEqual({
      kind: 'duplicate',
      idempotencyKey: 'placed:o-dup',
    });

    const instance = await harness.sagas.find('checkout', 'o-dup');
    expect(instance).toMatchObject({ version: 1 });
    expect(instance?.pendingTimeouts).toHaveLength(1);
    expect(instance?.history).toHaveLength(1);
    await harness.clock.advance(PAYMENT_TIMEOUT_MS + 1_000);
    expect(timeoutsConsumed()).toHaveLength(1);
  });

  it.each([
    [
      "'dead-letter' (the default): the message is dead-lettered",
      'paid',
      { kind: 'dead-lettered', reason: 'saga-instance-missing' },
    ],
    ["'ignore': the message is acknowledged and nothing is stored", 'noted', { kind: 'acked' }],
  ] as const)('meets onMissing %s', async (_case, type, outcome) => {
    const message =
      type === 'paid' ? of(Paid, { orderId: 'o-unknown' }) : of(Noted, { orderId: 'o-unknown' });
    expect(await harness.deliver(queue(type), message)).toMatchObject(outcome);
    expect(await harness.sagas.find('checkout', 'o-unknown')).toBeUndefined();
  });

  it.each([
    ["'ignore' (the default): acknowledged and recorded as ignored", 'payment-timed-out', { kind: 'acked' }],
    ["'dead-letter': dead-lettered", 'noted', { kind: 'dead-lettered', reason: 'saga-instance-completed' }],
  ] as const)('meets onCompleted %s, for a message to a completed instance', async (_case, type, outcome) => {
    await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-done' }));
    await harness.deliver(queue('paid'), of(Paid, { orderId: 'o-done' }));

    const late = type === 'noted' ? of(Noted, { orderId: 'o-done' }) : of(TimedOut, { orderId: 'o-done' });
    expect(await harness.deliver(queue(type), late)).toMatchObject(outcome);

    const instance = await harness.sagas.find('checkout', 'o-done');
    expect(instance).toMatchObject({ status: 'completed', version: 2, state: { outcome: 'paid' } });
    expect(instance?.history.map((entry) => entry.outcome)).toEqual(
      type === 'noted' ? ['started', 'completed'] : ['started', 'completed', 'ignored'],
    );
    expect(checkout.timedOut).toEqual([]);
  });

  it('undoes the timeout a failed step asked for, as a rollback would: the retry’s is the only one', async () => {
    checkout.failPlacedAfterTimeout = 1;
    const failed = await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-retry' }));
    expect(failed).toMatchObject({ kind: 'retried', nextAttempt: 2 });
    expect(await harness.sagas.find('checkout', 'o-retry')).toBeUndefined();

    await harness.clock.advance(failed.kind === 'retried' ? failed.delayMs : 0);
    const instance = await harness.sagas.find('checkout', 'o-retry');
    expect(instance).toMatchObject({ version: 1 });
    expect(instance?.pendingTimeouts).toHaveLength(1);

    await harness.clock.advance(PAYMENT_TIMEOUT_MS * 2);
    expect(timeoutsConsumed().map((record) => record.body)).toEqual([{ orderId: 'o-retry' }]);
  });

  it('moves to a moment with advanceTo(), firing what is due by then, the first due first', async () => {
    await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-first' }));
    await harness.clock.advance(5_000);
    await harness.deliver(queue('placed'), of(Placed, { orderId: 'o-second' }));
    const [secondTimeout] = (await harness.sagas.find('checkout', 'o-second'))!.pendingTimeouts;

    await harness.clock.advanceTo(new Date(Date.parse(secondTimeout.dueAt) + 1_000));

    expect(checkout.timedOut).toEqual(['o-first', 'o-second']);
    expect(harness.clock.now().getTime()).toBeGreaterThanOrEqual(Date.parse(secondTimeout.dueAt));
  });
});

describe("an ordinary handler's scheduled publishes on the harness clock", () => {
  let moduleRef: TestingModule;
  let harness: MessagingHarness;
  let reminders: Reminders;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReliableMessagingTestingModule.forRoot()],
      providers: [Reminders],
    }).compile();
    await moduleRef.init();
    harness = moduleRef.get(MessagingHarness);
    reminders = moduleRef.get(Reminders);
  });

  afterAll(async () => {
    await moduleRef?.close();
  });

  it('holds publish({ delayMs }) until the clock reaches it, then delivers in due order', async () => {
    await harness.deliver('reminders.noted', of(Noted, { orderId: 'o-1' }));
    // Nothing leaves before it is due.
    expect(harness.published.filter((record) => record.type === 'checkout.reminder')).toHaveLength(0);
    await harness.clock.advance(9_000);
    expect(reminders.received).toEqual([]);

    await harness.clock.advance(30_000);

    expect(harness.published.map((record) => record.body)).toEqual([
      { orderId: 'o-1', label: 'early' },
      { orderId: 'o-1', label: 'late' },
    ]);
    expect(reminders.received).toEqual(['early', 'late']);
  });
});
