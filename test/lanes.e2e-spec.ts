import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsIn, IsInt, IsString } from 'class-validator';
import {
  ConfigurationError,
  Consume,
  MessagePublisher,
  MessageType,
  type MessageContext,
} from 'nestjs-reliable-messaging';
import { DeadLetterOperations, ReliableMessagingAdminModule } from 'nestjs-reliable-messaging-admin';
import { InboxStats } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

type Mode = 'ok' | 'flaky' | 'always' | 'hold';

@MessageType({ type: 'lanes.receipt', idempotencyKey: (m: Receipt) => `receipt:${m.id}` })
class Receipt {
  @IsString() id!: string;
  @IsIn(['ok', 'flaky', 'always', 'hold']) mode!: Mode;
}

/** A class whose messages go to the bulk lane unless the publish call says otherwise. */
@MessageType({ type: 'lanes.statement', lane: 'bulk', idempotencyKey: (m: Statement) => `statement:${m.id}` })
class Statement {
  @IsString() id!: string;
}

@MessageType({ type: 'lanes.step', idempotencyKey: (m: Step) => `step:${m.id}` })
class Step {
  @IsString() id!: string;
}

const receipt = (id: string, mode: Mode = 'ok'): Receipt => Object.assign(new Receipt(), { id, mode });

/** A promise with its resolve function, to hold handlers until the test lets them finish. */
class Gate {
  open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
}

const RECEIPTS = uniqueQueue('receipt');
const LEDGER = uniqueQueue('ledger');
const STEPS = uniqueQueue('steps');
const BULK_SLOTS = 2;

interface Handled {
  id: string;
  queue: string;
  attempt: number;
}

@Injectable()
class ReceiptHandler {
  readonly handled: Handled[] = [];
  readonly started: Handled[] = [];
  gate = new Gate();

  // NOTE: classic queues, whose counts rabbitmqctl reports at once (a quorum queue's lag).
  @Consume({
    queue: RECEIPTS,
    queueType: 'classic',
    lanes: { urgent: { concurrency: 4 }, bulk: { concurrency: BULK_SLOTS, maxPriority: 9 } },
    retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 },
  })
  async onReceipt(message: Receipt, ctx: MessageContext): Promise<void> {
    const entry = { id: message.id, queue: ctx.queue, attempt: ctx.attempt };
    this.started.push(entry);
    if (message.mode === 'hold') await this.gate.opened;
    if (message.mode === 'always') throw new Error('the printer is on fire');
    if (message.mode === 'flaky' && ctx.attempt === 1) throw new Error('the printer is warming up');
    this.handled.push(entry);
  }

  @Consume({ queue: `${RECEIPTS}-statements`, queueType: 'classic', dedup: false })
  async onStatement(_message: Statement, ctx: MessageContext): Promise<void> {
    this.statementLanes.push(String(ctx.envelope.headers['rm-lane']));
  }

  readonly statementLanes: string[] = [];
}

@Injectable()
class StepHandler {
  readonly seen: Array<{ id: string; queue: string }> = [];

  @Consume({ queue: STEPS, queueType: 'quorum', ordering: 'queue', lanes: { live: {}, replay: {} } })
  async onStep(message: Step, ctx: MessageContext): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    // Even steps take longer, so that steps handled side by side would finish out of order.
    const step = Number(message.id.slice('step-'.length));
    await new Promise((resolve) => setTimeout(resolve, step % 2 === 0 ? 10 : 0));
    this.seen.push({ id: message.id, queue: ctx.queue });
    this.inFlight--;
  }

  inFlight = 0;
  maxInFlight = 0;
}

@MessageType({
  type: 'lanes.entry',
  idempotencyKey: (m: Entry) => `entry:${m.account}:${m.seq}`,
  orderingKey: (m: Entry) => m.account,
})
class Entry {
  @IsString() account!: string;
  @IsInt() seq!: number;
}

/** Ordered by account within each lane, over two partitions per lane. */
@Injectable()
class LedgerHandler {
  readonly seen: Array<{ account: string; seq: number; queue: string }> = [];

  @Consume({
    queue: LEDGER,
    ordering: { by: 'key', partitions: 2 },
    lanes: { live: {}, backfill: {} },
  })
  async onEntry(entry: Entry, ctx: MessageContext): Promise<void> {
    // Even entries take longer, so that entries of one account handled side by side would finish out of order.
    await new Promise((resolve) => setTimeout(resolve, entry.seq % 2 === 0 ? 5 : 0));
    this.seen.push({ account: entry.account, seq: entry.seq, queue: ctx.queue });
  }
}

describe('lanes: one consumer, a queue per lane', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: ReceiptHandler;
  let publisher: MessagePublisher;

  beforeAll(async () => {
    db = await createMessagingDatabase([], { admin: true });
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [ReceiptHandler, StepHandler, LedgerHandler],
      imports: [ReliableMessagingAdminModule],
      options: { dataSource: db.dataSource, lanes: ['elsewhere'] },
    });
    handler = app.get(ReceiptHandler);
    publisher = app.get(MessagePublisher);
  });

  afterAll(async () => {
    handler?.gate.open();
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  const handledFrom = (id: string): string[] =>
    handler.handled.filter((entry) => entry.id === id).map((entry) => entry.queue);

  it.each<[string, { lane?: string }, string]>([
    ['the lane it names', { lane: 'bulk' }, `${RECEIPTS}.bulk`],
    ['the default lane (the first) when it names none', {}, `${RECEIPTS}.urgent`],
    [
      'the default lane when it names a lane this consumer lacks',
      { lane: 'elsewhere' },
      `${RECEIPTS}.urgent`,
    ],
  ])('routes a message to %s', async (_case, options, queue) => {
    const id = `route-${options.lane ?? 'none'}`;
    await publisher.publishNow(receipt(id), options);

    await waitFor(`${id} handled`, () => handledFrom(id).length === 1);
    expect(handledFrom(id)).toEqual([queue]);
  });

  it('takes the lane from @MessageType({ lane }), and the publish call overrides it', async () => {
    await publisher.publishNow(Object.assign(new Statement(), { id: 's1' }));
    await publisher.publishNow(Object.assign(new Statement(), { id: 's2' }), { lane: 'urgent' });

    await waitFor('both statements handled', () => handler.statementLanes.length === 2);
    expect(handler.statementLanes.sort()).toEqual(['bulk', 'urgent']);
  });

  it('relays a message written to the outbox to its lane', async () => {
    await db.dataSource.transaction((manager) =>
      publisher.publish(receipt('outboxed'), { lane: 'bulk', manager }),
    );

    await waitFor('the outboxed receipt handled', () => handledFrom('outboxed').length === 1);
    expect(handledFrom('outboxed')).toEqual([`${RECEIPTS}.bulk`]);
  });

  it('handles urgent messages while every bulk slot is busy and bulk messages wait', async () => {
    handler.gate = new Gate();
    for (let i = 0; i < BULK_SLOTS + 3; i++) {
      await publisher.publishNow(receipt(`busy-${i}`, 'hold'), { lane: 'bulk' });
    }
    await waitFor(
      'every bulk slot held',
      () => handler.started.filter((e) => e.id.startsWith('busy-')).length === BULK_SLOTS,
    );

    for (let i = 0; i < 3; i++) await publisher.publishNow(receipt(`urgent-${i}`), { lane: 'urgent' });
    await waitFor('the urgent receipts handled', () =>
      [0, 1, 2].every((i) => handledFrom(`urgent-${i}`).length === 1),
    );

    expect(handler.started.filter((e) => e.id.startsWith('busy-'))).toHaveLength(BULK_SLOTS);
    expect(await broker.queueDepth(`${RECEIPTS}.bulk`)).toBe(3);
    handler.gate.open();
    await waitFor('the bulk receipts handled', () =>
      [0, 1, 2, 3, 4].every((i) => handledFrom(`busy-${i}`).length === 1),
    );
  });

  it('delivers a waiting bulk message of higher priority before those queued earlier (classic lane queue with maxPriority)', async () => {
    handler.gate = new Gate();
    for (let i = 0; i < BULK_SLOTS; i++) {
      await publisher.publishNow(receipt(`slot-${i}`, 'hold'), { lane: 'bulk' });
    }
    await waitFor(
      'every bulk slot held',
      () => handler.started.filter((e) => e.id.startsWith('slot-')).length === BULK_SLOTS,
    );
    for (let i = 0; i < 3; i++) await publisher.publishNow(receipt(`low-${i}`), { lane: 'bulk' });
    await publisher.publishNow(receipt('high'), { lane: 'bulk', priority: 9 });
    await waitFor('four receipts waiting', async () => (await broker.queueDepth(`${RECEIPTS}.bulk`)) === 4);

    handler.gate.open();
    await waitFor('the waiting receipts handled', () =>
      ['high', 'low-0', 'low-1', 'low-2'].every((id) => handledFrom(id).length === 1),
    );
    // In queue order 'high' would start last, after 'low-2'; by priority it is among the first two delivered.
    const order = handler.started.map((entry) => entry.id);
    expect(order.indexOf('high')).toBeLessThan(order.indexOf('low-1'));
  });

  it('retries a failed bulk message on the bulk lane', async () => {
    await publisher.publishNow(receipt('flaky', 'flaky'), { lane: 'bulk' });

    await waitFor('the retry handled', () => handledFrom('flaky').length === 1);
    expect(handler.started.filter((e) => e.id === 'flaky')).toEqual([
      { id: 'flaky', queue: `${RECEIPTS}.bulk`, attempt: 1 },
      { id: 'flaky', queue: `${RECEIPTS}.bulk`, attempt: 2 },
    ]);
  });

  it("dead-letters a bulk message to the bulk lane's dead-letter queue, where the tools find it by the consumer's queue", async () => {
    await publisher.publishNow(receipt('doomed', 'always'), { lane: 'bulk' });

    await waitFor('the dead letter', async () => (await broker.queueDepth(`${RECEIPTS}.bulk.dlq`)) === 1);
    expect(await broker.queueDepth(`${RECEIPTS}.urgent.dlq`)).toBe(0);
    const operations = app.get(DeadLetterOperations);
    const { deadLetters } = await operations.list({ queue: RECEIPTS });
    expect(deadLetters.map((d) => [d.idempotencyKey, d.queue, d.deadLetterQueue])).toEqual([
      ['receipt:doomed', `${RECEIPTS}.bulk`, `${RECEIPTS}.bulk.dlq`],
    ]);

    // Replayed by the consumer's queue, it runs on the bulk lane again (and, failing again, comes back).
    const replayed = await operations.replay({ queue: RECEIPTS, all: true }, { actor: 'lanes-spec' });
    expect({ replayed: replayed.messageIds.length, failures: replayed.failures }).toEqual({
      replayed: 1,
      failures: [],
    });
    await waitFor(
      'the replayed message tried twice more and dead-lettered again',
      async () =>
        handler.started.filter((e) => e.id === 'doomed').length === 4 &&
        (await broker.queueDepth(`${RECEIPTS}.bulk.dlq`)) === 1,
    );
    expect(handler.started.filter((e) => e.id === 'doomed').map((e) => [e.queue, e.attempt])).toEqual([
      [`${RECEIPTS}.bulk`, 1],
      [`${RECEIPTS}.bulk`, 2],
      [`${RECEIPTS}.bulk`, 1],
      [`${RECEIPTS}.bulk`, 2],
    ]);
    expect(await broker.queueDepth(`${RECEIPTS}.urgent.dlq`)).toBe(0);
  });

  it('handles one idempotency key once across lanes: one inbox for the consumer', async () => {
    await publisher.publishNow(receipt('twice'), { lane: 'urgent' });
    await publisher.publishNow(receipt('twice'), { lane: 'bulk' });

    await waitFor('the second copy skipped as a duplicate', () => app.get(InboxStats).duplicates === 1);
    expect(handledFrom('twice')).toHaveLength(1);
    expect(
      await db.dataSource.query(`SELECT consumer FROM rm_inbox WHERE idempotency_key = 'receipt:twice'`),
    ).toEqual([{ consumer: RECEIPTS }]);
  });

  // The 30 steps have no ordering key; written in one transaction, they leave the outbox in the order written
  // (docs/ordering.md), and the lane's single-active-consumer queue hands them over in that order.
  it('keeps order within a lane when the consumer is ordered', async () => {
    const steps = app.get(StepHandler);
    const ids = Array.from({ length: 30 }, (_, i) => `step-${String(i).padStart(2, '0')}`);
    await db.dataSource.transaction((manager) =>
      publisher.publishAll(
        ids.map((id) => Object.assign(new Step(), { id })),
        { lane: 'replay', manager },
      ),
    );

    await waitFor('every step handled', () => steps.seen.length === ids.length);
    expect(steps.seen.map((s) => s.id)).toEqual(ids);
    expect(steps.maxInFlight).toBe(1);
    expect(new Set(steps.seen.map((s) => s.queue))).toEqual(new Set([`${STEPS}.replay`]));
  });

  it("keeps each key in order within a lane ordered by key, on that lane's partitions", async () => {
    const ledger = app.get(LedgerHandler);
    const accounts = ['acc-1', 'acc-2', 'acc-3', 'acc-4'];
    const entries = accounts.flatMap((account) =>
      Array.from({ length: 10 }, (_, seq) => Object.assign(new Entry(), { account, seq })),
    );
    await db.dataSource.transaction((manager) =>
      publisher.publishAll(entries, { lane: 'backfill', manager }),
    );
    await publisher.publishNow(Object.assign(new Entry(), { account: 'acc-live', seq: 0 }));

    await waitFor('every entry handled', () => ledger.seen.length === entries.length + 1);
    for (const account of accounts) {
      expect(ledger.seen.filter((e) => e.account === account).map((e) => e.seq)).toEqual([
        ...Array(10).keys(),
      ]);
    }
    const queues = (account: string) =>
      new Set(ledger.seen.filter((e) => e.account === account).map((e) => e.queue));
    for (const account of accounts) {
      expect([...queues(account)]).toEqual([
        expect.stringMatching(new RegExp(`^${LEDGER}\\.backfill\\.p00[01]$`)),
      ]);
    }
    expect([...queues('acc-live')]).toEqual([
      expect.stringMatching(new RegExp(`^${LEDGER}\\.live\\.p00[01]$`)),
    ]);
  });

  it.each<[string, unknown, RegExp]>([
    [
      'an unknown lane',
      'bulky',
      /unknown lane 'bulky'; the known lanes are backfill, bulk, elsewhere, live, replay, urgent/,
    ],
    ['a lane that is not a name', 'Bulk Lane', /unknown lane 'Bulk Lane'/],
  ])('refuses to publish to %s with an error naming the known lanes', async (_case, lane, message) => {
    await expect(publisher.publishNow(receipt('nowhere'), { lane: lane as string })).rejects.toThrow(
      ConfigurationError,
    );
    await expect(publisher.publishNow(receipt('nowhere'), { lane: lane as string })).rejects.toThrow(message);
  });

  it('refuses a priority outside 0 to 255', async () => {
    await expect(publisher.publishNow(receipt('loud'), { lane: 'bulk', priority: 256 })).rejects.toThrow(
      /priority must be an integer from 0 to 255/,
    );
  });
});
