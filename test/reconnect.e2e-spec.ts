import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt } from 'class-validator';
import {
  Consume,
  MessageType,
  PublishError,
  PublishTimeoutError,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import { closeConnectionsNamed, MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TcpProxy } from './support/tcp-proxy';
import { TestBroker } from './support/test-broker';
import { sleep, waitFor } from './support/wait-for';

@MessageType({ type: 'ledger.entry-posted', idempotencyKey: (m: EntryPosted) => `entry:${m.n}` })
class EntryPosted {
  @IsInt() n!: number;
}

const QUEUE = uniqueQueue('ledger');
const CONFIRM_TIMEOUT_MS = 30_000;

/** Records every delivery; the set of distinct entries is what was applied, the rest are redeliveries. */
@Injectable()
class LedgerHandler {
  readonly deliveries: number[] = [];
  readonly applied = new Set<number>();

  @Consume({ queue: QUEUE, concurrency: 20 })
  async onEntryPosted(event: EntryPosted, _ctx: MessageContext): Promise<void> {
    this.deliveries.push(event.n);
    await sleep(2);
    this.applied.add(event.n);
  }
}

/** How one message's publishing went: attempts until the broker confirmed, the errors, the slowest attempt. */
interface PublishOutcome {
  attempts: number;
  errors: unknown[];
  slowestAttemptMs: number;
}

/**
 * Publishes entries 0..count-1 with `window` publishes awaiting their confirm at once, retrying each failed
 * publish (as an outbox relay would) until the broker confirms it. Publishing keeps at most `backlog` entries
 * ahead of the consumer, so it goes on for as long as consuming does and spans every drop, and publishes no
 * entry at or past `upTo()`, so a slow drop (rabbitmqctl takes seconds on a busy machine) cannot find the work
 * already done.
 */
async function publishAll(
  app: MessagingTestApp,
  ledger: LedgerHandler,
  count: number,
  window: number,
  backlog: number,
  upTo: () => number,
): Promise<PublishOutcome[]> {
  const outcomes: PublishOutcome[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const n = next++;
      while (n - ledger.applied.size > backlog || n >= upTo()) await sleep(2);
      const outcome: PublishOutcome = { attempts: 0, errors: [], slowestAttemptMs: 0 };
      outcomes[n] = outcome;
      for (;;) {
        outcome.attempts++;
        const started = Date.now();
        try {
          await app.publisher.publish(Object.assign(new EntryPosted(), { n }));
          break;
        } catch (error) {
          outcome.errors.push(error);
          if (outcome.attempts > 200) throw error;
          await sleep(25);
        } finally {
          outcome.slowestAttemptMs = Math.max(outcome.slowestAttemptMs, Date.now() - started);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
  return outcomes;
}

describe('the broker closes the connection while the app publishes and consumes', () => {
  let broker: TestBroker;
  let app: MessagingTestApp;
  let ledger: LedgerHandler;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [LedgerHandler],
      options: {
        publishConfirmTimeoutMs: CONFIRM_TIMEOUT_MS,
        reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
      },
    });
    ledger = app.get(LedgerHandler);
  });

  afterAll(async () => {
    await app?.close();
    await broker.deleteByPrefix();
    await broker.close();
  });

  it('reconnects, resubscribes and loses nothing while publishing and consuming through two drops', async () => {
    const count = 4000;
    let upTo = 1000;
    const publishing = publishAll(app, ledger, count, 50, 200, () => upTo);

    for (const [drop, appliedBefore, thenUpTo] of [
      [1, 800, 2000],
      [2, 1600, count],
    ]) {
      await waitFor(`${appliedBefore} entries to be applied`, () => ledger.applied.size >= appliedBefore, {
        timeoutMs: 30_000,
      });
      expect(ledger.applied.size).toBeLessThan(count);
      // The app's two connections, consumer and publisher, as a broker restart would close them.
      expect(await closeConnectionsNamed(app.connectionName)).toBe(2);
      await waitFor(
        `reconnection ${drop}`,
        () => app.logger.find('log', /connection: connected to /).length === 2 * (drop + 1),
        {
          timeoutMs: 10_000,
        },
      );
      upTo = thenUpTo;
    }
    const outcomes = await publishing;

    await waitFor(
      () => `every entry to be applied (applied ${ledger.applied.size})`,
      () => ledger.applied.size === count,
      {
        timeoutMs: 30_000,
      },
    );
    const missing = Array.from({ length: count }, (_, n) => n).filter((n) => !ledger.applied.has(n));
    expect(missing).toEqual([]);

    // Publishes that failed with a drop were retried; none waited for the confirm timeout.
    const errors = outcomes.flatMap((outcome) => outcome.errors);
    expect(errors.filter((error) => !(error instanceof PublishError))).toEqual([]);
    expect(errors.filter((error) => error instanceof PublishTimeoutError)).toEqual([]);
    expect(Math.max(...outcomes.map((outcome) => outcome.slowestAttemptMs))).toBeLessThan(5_000);

    expect(app.logger.find('warn', /^consumer connection: .* lost; reconnecting/)).toHaveLength(2);
    expect(app.logger.find('warn', /^publisher connection: .* lost; reconnecting/)).toHaveLength(2);
    expect(
      app.logger.find('log', /^(consumer|publisher) connection: connected to amqp:\/\/127\.0\.0\.1:5672$/),
    ).toHaveLength(6);
    await waitFor('the queue to drain', async () => {
      const { messageCount, consumerCount } = await (await broker.openChannel()).checkQueue(QUEUE);
      return messageCount === 0 && consumerCount === 1;
    });
    // Redeliveries of messages whose acknowledgement died with the connection are expected (at-least-once).
    expect(ledger.deliveries.length).toBeGreaterThanOrEqual(count);
  });

  it('keeps consuming after the drops: a message published now is handled', async () => {
    await app.publisher.publish(Object.assign(new EntryPosted(), { n: -1 }));

    // Behind whatever the previous test published while its drop was under way: seconds of work on a busy machine.
    await waitFor('the new entry', () => ledger.applied.has(-1), { timeoutMs: 30_000 });
  });
});

describe('publishes awaiting their confirms when the connection drops', () => {
  let broker: TestBroker;
  let proxy: TcpProxy;
  let app: MessagingTestApp;
  /** Bound to the app's exchange for the entries: where the broker puts what it will confirm. */
  let queue: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    proxy = await TcpProxy.start(broker.url);
    app = await MessagingTestApp.start(broker, {
      options: {
        urls: proxy.url,
        publishConfirmTimeoutMs: CONFIRM_TIMEOUT_MS,
        reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
      },
    });
    queue = broker.name('pending-confirms');
    const channel = await broker.openChannel();
    await channel.assertQueue(queue, { durable: false });
    await channel.bindQueue(queue, broker.name('events'), 'ledger.entry-posted');
  });

  afterAll(async () => {
    await app?.close();
    await proxy?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
  });

  it('rejects every confirm pending at once when the connection drops, not after the confirm timeout', async () => {
    const COUNT = 20;
    // The broker still receives every publish, but its confirms never reach the app.
    proxy.dropReplies();
    const outcomes: Array<{ settledAt?: number; error?: unknown }> = [];
    const publishing = Array.from({ length: COUNT }, (_, i) => {
      const outcome: { settledAt?: number; error?: unknown } = {};
      outcomes.push(outcome);
      return app.publisher.publishNow(Object.assign(new EntryPosted(), { n: 200_000 + i })).then(
        () => (outcome.settledAt = Date.now()),
        (error: unknown) => Object.assign(outcome, { settledAt: Date.now(), error }),
      );
    });

    // Every message is in the queue, so the broker has confirmed or will confirm it, and no confirm can
    // have reached the app: all twenty are pending.
    await waitFor(
      `the broker to hold all ${COUNT} entries`,
      async () => (await broker.queueDepth(queue)) === COUNT,
    );
    expect(outcomes.filter((outcome) => outcome.settledAt !== undefined)).toEqual([]);

    const droppedAt = Date.now();
    proxy.cut();
    await Promise.all(publishing);

    expect(outcomes.map(({ error }) => error instanceof PublishError)).toEqual(Array(COUNT).fill(true));
    expect(outcomes.filter(({ error }) => error instanceof PublishTimeoutError)).toEqual([]);
    expect(Math.max(...outcomes.map(({ settledAt }) => settledAt! - droppedAt))).toBeLessThan(2_000);
    proxy.restore();
  });
});
