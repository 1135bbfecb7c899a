import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt } from 'class-validator';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'handover.slow-step', idempotencyKey: (m: SlowStep) => `slow:${m.seq}` })
class SlowStep {
  @IsInt() seq!: number;
}

@MessageType({ type: 'handover.failing-step', idempotencyKey: (m: FailingStep) => `failing:${m.seq}` })
class FailingStep {
  @IsInt() seq!: number;
}

const SLOW_QUEUE = uniqueQueue('handover-slow');
const FAILING_QUEUE = uniqueQueue('handover-failing');
/** What the handlers of both replicas did, in the order they did it: `<replica>:<queue>:<seq>:<what>`. */
const events: string[] = [];
const eventsOf = (queue: 'slow' | 'failing'): string[] =>
  events.filter((event) => event.split(':')[1] === queue);
/** How long the first replica's handler of step 1 waits for the second replica to start anything. */
const WATCH_MS = 1_000;

@Injectable()
class Steps {
  replica = '?';
  private held?: () => void;
  readonly holding = new Promise<void>((resolve) => (this.held = resolve));

  /** Step 1 on the first replica takes a while: the second may take over only after it is acknowledged. */
  @Consume({ queue: SLOW_QUEUE, ordering: 'queue' })
  async onSlow(step: SlowStep): Promise<void> {
    events.push(`${this.replica}:slow:${step.seq}:start`);
    if (this.replica === 'first' && step.seq === 1) {
      this.held?.();
      await secondStarts('slow');
    }
    events.push(`${this.replica}:slow:${step.seq}:end`);
  }

  /** Step 1 fails on the first replica, which is stopped while it waits to retry in place. */
  @Consume({
    queue: FAILING_QUEUE,
    ordering: 'queue',
    prefetch: 3,
    retry: { maxAttempts: 5, initialDelayMs: 20_000, maxDelayMs: 20_000 },
  })
  async onFailing(step: FailingStep, ctx: MessageContext): Promise<void> {
    events.push(`${this.replica}:failing:${step.seq}:start`);
    if (this.replica === 'first' && step.seq === 1) {
      this.held?.();
      throw new Error(`step 1 cannot be applied yet (attempt ${ctx.attempt})`);
    }
    events.push(`${this.replica}:failing:${step.seq}:end`);
  }
}

/** Resolves when the second replica starts a step of `queue`, or after WATCH_MS. */
async function secondStarts(queue: string): Promise<void> {
  const started = (): boolean => events.some((event) => event.startsWith(`second:${queue}:`));
  const until = Date.now() + WATCH_MS;
  while (!started() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
}

function closesOnce(app: MessagingTestApp): MessagingTestApp {
  const close = app.close.bind(app);
  let closing: Promise<void> | undefined;
  app.close = () => (closing ??= close());
  return app;
}

const slow = (seq: number): SlowStep => Object.assign(new SlowStep(), { seq });
const failing = (seq: number): FailingStep => Object.assign(new FailingStep(), { seq });

/**
 * A graceful stop of the replica that holds an ordered queue (a rolling deploy) hands the queue to the next
 * replica without reordering it. RabbitMQ activates the next single active consumer as soon as the active one
 * cancels, whatever that one still holds; so the replica keeps its subscription until its channel closes and
 * starts nothing more meanwhile, and the close returns what it held, in order.
 */
describe('ordering: a graceful stop hands the queue over in order', () => {
  let broker: TestBroker;

  beforeAll(async () => {
    broker = await TestBroker.connect();
  });

  afterAll(async () => {
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  /**
   * Two replicas of one app; the first holds both queues. Each is subscribed once it has started (the broker
   * answers consume-ok once the queue has the consumer), so the second waits behind the first.
   */
  async function replicas(): Promise<[MessagingTestApp, MessagingTestApp]> {
    const first = closesOnce(await MessagingTestApp.start(broker, { providers: [Steps] }));
    first.get(Steps).replica = 'first';
    const second = closesOnce(await MessagingTestApp.start(broker, { providers: [Steps] }));
    second.get(Steps).replica = 'second';
    return [first, second];
  }

  it('lets the next replica start only after the message in hand is acknowledged', async () => {
    const [first, second] = await replicas();
    try {
      for (const seq of [1, 2, 3]) await first.publisher.publish(slow(seq));
      await first.get(Steps).holding;

      await first.close();
      await waitFor('the second replica handled steps 2 and 3', () =>
        eventsOf('slow').includes('second:slow:3:end'),
      );

      expect(eventsOf('slow')).toEqual([
        'first:slow:1:start',
        'first:slow:1:end',
        'second:slow:2:start',
        'second:slow:2:end',
        'second:slow:3:start',
        'second:slow:3:end',
      ]);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('gives a message waiting to retry back first, and the ones fetched behind it after it', async () => {
    const [first, second] = await replicas();
    try {
      for (const seq of [1, 2, 3]) await first.publisher.publish(failing(seq));
      await first.get(Steps).holding;
      // Steps 2 and 3 are fetched (prefetch 3) while step 1 waits 20 s for its next attempt.
      await waitFor(
        'steps 2 and 3 fetched by the first replica',
        async () => (await broker.checkQueue(FAILING_QUEUE)).messageCount === 0,
      );

      await first.close();
      await waitFor('the second replica handled all three steps', () =>
        ['1', '2', '3'].every((seq) => eventsOf('failing').includes(`second:failing:${seq}:end`)),
      );

      expect(eventsOf('failing')).toEqual([
        'first:failing:1:start',
        'second:failing:1:start',
        'second:failing:1:end',
        'second:failing:2:start',
        'second:failing:2:end',
        'second:failing:3:start',
        'second:failing:3:end',
      ]);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
