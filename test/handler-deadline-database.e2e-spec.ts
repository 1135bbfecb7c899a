import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'billing.invoice-due', idempotencyKey: (m: InvoiceDue) => `invoice:${m.id}` })
class InvoiceDue {
  @IsString() id!: string;
}

@MessageType({ type: 'billing.reminder-due', idempotencyKey: (m: ReminderDue) => `reminder:${m.id}` })
class ReminderDue {
  @IsString() id!: string;
}

const INVOICES = uniqueQueue('invoices');
const REMINDERS = uniqueQueue('reminders');

/** One run of the invoice handler, as it saw it. */
interface InvoiceRun {
  attempt: number;
  startedAt: number;
  statementError?: string;
  lateWriteError?: string;
  returnedAt?: number;
}

/**
 * Its first attempt ignores its signal: a statement that outlives the deadline, then a wait the spec ends, then
 * one more write. Later attempts just write.
 */
@Injectable()
class BillingHandler {
  readonly invoiceRuns: InvoiceRun[] = [];
  readonly reminders: Array<{ id: string; doneAt: number }> = [];
  release!: () => void;
  private readonly released = new Promise<void>((resolve) => (this.release = resolve));

  @Consume({
    queue: INVOICES,
    queueType: 'classic',
    concurrency: 1,
    deadlineMs: 300,
    retry: { maxAttempts: 2, initialDelayMs: 0, maxDelayMs: 0 },
  })
  async onInvoice(event: InvoiceDue, ctx: MessageContext): Promise<void> {
    const run: InvoiceRun = { attempt: ctx.attempt, startedAt: Date.now() };
    this.invoiceRuns.push(run);
    await ctx.manager!.query('INSERT INTO invoices (id, attempt) VALUES ($1, $2)', [event.id, ctx.attempt]);
    if (ctx.attempt === 1) {
      try {
        await ctx.manager!.query('SELECT pg_sleep(30)');
      } catch (error) {
        run.statementError = (error as Error).message;
      }
      await this.released;
      try {
        await ctx.manager!.query('INSERT INTO invoices (id, attempt) VALUES ($1, 99)', [event.id]);
      } catch (error) {
        run.lateWriteError = (error as Error).message;
      }
    }
    run.returnedAt = Date.now();
  }

  @Consume({ queue: REMINDERS, queueType: 'classic', concurrency: 1 })
  async onReminder(event: ReminderDue, ctx: MessageContext): Promise<void> {
    await ctx.manager!.query('INSERT INTO reminders (id) VALUES ($1)', [event.id]);
    this.reminders.push({ id: event.id, doneAt: Date.now() });
  }
}

describe('handler deadline with the inbox: the abandoned attempt gives its transaction back', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE invoices (id text NOT NULL, attempt int NOT NULL)',
      'CREATE TABLE reminders (id text PRIMARY KEY)',
    ]);
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [BillingHandler],
      // One connection in the pool: an abandoned transaction that kept it would stop every other consumer.
      options: { dataSource: await db.connect(1), outbox: { relay: false } },
    });
  });

  afterAll(async () => {
    app?.get(BillingHandler).release();
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('rolls back at the deadline, ends the running statement, frees the pool, and retries only after the handler returned', async () => {
    const handler = app.get(BillingHandler);
    await app.publisher.publishNow(Object.assign(new InvoiceDue(), { id: 'i-1' }));

    await waitFor(
      'the statement of the abandoned attempt to end',
      () => handler.invoiceRuns[0]?.statementError !== undefined,
    );
    expect(handler.invoiceRuns[0].statementError).toMatch(/terminat|cancel/i);

    await app.publisher.publishNow(Object.assign(new ReminderDue(), { id: 'rem-1' }));
    await waitFor(
      'the reminder, on the pool the abandoned attempt gave back',
      () => handler.reminders.length === 1,
    );
    expect(handler.invoiceRuns).toHaveLength(1);
    expect(handler.invoiceRuns[0].returnedAt).toBeUndefined();

    handler.release();
    await waitFor(
      'the retry of the invoice to return',
      () => handler.invoiceRuns[1]?.returnedAt !== undefined,
    );
    const [first, second] = handler.invoiceRuns;
    expect(first.lateWriteError).toMatch(/released|terminat|not queryable/i);
    expect(second.attempt).toBe(2);
    expect(second.startedAt).toBeGreaterThanOrEqual(first.returnedAt!);
    expect(await db.dataSource.query('SELECT id, attempt FROM invoices')).toEqual([
      { id: 'i-1', attempt: 2 },
    ]);
    const [inbox] = await db.dataSource.query<Array<{ n: number }>>(
      'SELECT count(*)::int AS n FROM rm_inbox WHERE consumer = $1',
      [INVOICES],
    );
    expect(inbox.n).toBe(1);
  });
});

@MessageType({ type: 'billing.charge-due', idempotencyKey: (m: ChargeDue) => `charge:${m.id}` })
class ChargeDue {
  @IsString() id!: string;
}

const CHARGES = uniqueQueue('charges');

/**
 * Its first attempt runs a statement that ends just after the deadline, then writes at once, as a handler that
 * ignores its signal does: after a plain ROLLBACK, the write would run on the same connection on its own.
 */
@Injectable()
class ChargeHandler {
  readonly runs: Array<{ attempt: number; lateWriteError?: string; returned: boolean }> = [];

  @Consume({
    queue: CHARGES,
    queueType: 'classic',
    concurrency: 1,
    deadlineMs: 300,
    retry: { maxAttempts: 2, initialDelayMs: 0, maxDelayMs: 0 },
  })
  async onCharge(event: ChargeDue, ctx: MessageContext): Promise<void> {
    const run: (typeof this.runs)[number] = { attempt: ctx.attempt, returned: false };
    this.runs.push(run);
    if (ctx.attempt === 1) {
      await ctx.manager!.query('SELECT pg_sleep(0.7)').catch(() => undefined);
      try {
        await ctx.manager!.query('INSERT INTO charges (id, attempt) VALUES ($1, 1)', [event.id]);
      } catch (error) {
        run.lateWriteError = (error as Error).message;
      }
    } else {
      await ctx.manager!.query('INSERT INTO charges (id, attempt) VALUES ($1, $2)', [event.id, ctx.attempt]);
    }
    run.returned = true;
  }
}

describe('handler deadline with the inbox: nothing the abandoned attempt sends afterwards commits', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;

  beforeAll(async () => {
    db = await createMessagingDatabase(['CREATE TABLE charges (id text NOT NULL, attempt int NOT NULL)']);
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [ChargeHandler],
      options: { dataSource: db.dataSource, outbox: { relay: false } },
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('charges once: a write the abandoned attempt sends after the deadline fails instead of committing', async () => {
    const handler = app.get(ChargeHandler);
    await app.publisher.publishNow(Object.assign(new ChargeDue(), { id: 'c-1' }));

    await waitFor('the retry of the charge to return', () => handler.runs[1]?.returned === true);
    expect(handler.runs.map((run) => run.attempt)).toEqual([1, 2]);
    expect(await db.dataSource.query('SELECT id, attempt FROM charges')).toEqual([{ id: 'c-1', attempt: 2 }]);
    expect(handler.runs[0].lateWriteError).toMatch(/released|terminat|not queryable|closed/i);
  });
});
