import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Injectable, type CanActivate, type ExecutionContext, UseGuards } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { IsInt, IsString, Min } from 'class-validator';
import { Consume } from '../decorators/consume.decorator';
import { MessageType } from '../decorators/message-type.decorator';
import { Publish } from '../decorators/publish.decorator';
import type { MessageContext } from '../context/message-context';
import { MessagingHarness } from './messaging-harness';
import { ReliableMessagingTestingModule } from './reliable-messaging-testing.module';

@MessageType({ type: 'invoice.issued', idempotencyKey: (m: InvoiceIssued) => `invoice:${m.invoiceId}` })
class InvoiceIssued {
  @IsString() invoiceId!: string;
  @IsInt() @Min(0) amountCents!: number;

  static of(invoiceId: string, amountCents = 100): InvoiceIssued {
    return Object.assign(new InvoiceIssued(), { invoiceId, amountCents });
  }
}

@MessageType({ type: 'invoice.booked', idempotencyKey: (m: InvoiceBooked) => `booked:${m.invoiceId}` })
class InvoiceBooked {
  @IsString() invoiceId!: string;
}

/** The ledger the handler books into; `failNext` makes it unavailable for that many calls. */
@Injectable()
class Ledger {
  readonly booked: string[] = [];
  failNext = 0;

  book(invoiceId: string): void {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('the ledger is unavailable');
    }
    this.booked.push(invoiceId);
  }
}

/** Refuses invoices from a blocked account, before the handler runs. */
class NotBlocked implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const invoice = context.switchToRpc().getData<InvoiceIssued>();
    return !invoice.invoiceId.startsWith('blocked-');
  }
}

@Injectable()
class Bookkeeper {
  constructor(private readonly ledger: Ledger) {}

  @Consume({
    queue: 'harness.bookkeeping',
    retry: { maxAttempts: 3, initialDelayMs: 1_000, maxDelayMs: 1_000 },
  })
  @UseGuards(NotBlocked)
  @Publish()
  onIssued(invoice: InvoiceIssued, ctx: MessageContext): InvoiceBooked {
    expect(ctx.attempt).toBeGreaterThanOrEqual(1);
    this.ledger.book(invoice.invoiceId);
    return Object.assign(new InvoiceBooked(), { invoiceId: invoice.invoiceId });
  }
}

/** Files what was booked: the consumer of the event the bookkeeper publishes. */
@Injectable()
class Archive {
  readonly filed: string[] = [];

  @Consume({ queue: 'harness.archive' })
  onBooked(booked: InvoiceBooked): void {
    this.filed.push(booked.invoiceId);
  }
}

/**
 * The harness against the module on the in-memory broker, with no service running: each outcome a handler can
 * have, as a test of the app's own handler would read it.
 */
describe('MessagingHarness', () => {
  let moduleRef: TestingModule;
  let harness: MessagingHarness;
  let ledger: Ledger;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ReliableMessagingTestingModule.forRoot()],
      providers: [Ledger, Bookkeeper, Archive],
    })
      .setLogger({ log() {}, warn() {}, error() {}, debug() {}, verbose() {} })
      .compile();
    await moduleRef.init();
    harness = moduleRef.get(MessagingHarness);
    ledger = moduleRef.get(Ledger);
  });

  afterAll(async () => {
    await moduleRef?.close();
  });

  beforeEach(() => {
    harness.reset();
    ledger.failNext = 0;
  });

  it('acknowledges a handled message, and records the event its handler published', async () => {
    const outcome = await harness.deliver('harness.bookkeeping', InvoiceIssued.of('inv-1'));

    expect(outcome).toEqual({ kind: 'acked' });
    expect(ledger.booked).toContain('inv-1');
    const booked = await harness.waitFor('published', (m) => m.type === 'invoice.booked');
    expect(booked).toMatchObject({ body: { invoiceId: 'inv-1' }, queues: ['harness.archive'] });
    await harness.waitFor(
      'consumed',
      (d) => d.queue === 'harness.archive' && d.messageId === booked.messageId,
    );
    expect(moduleRef.get(Archive).filed).toContain('inv-1');
  });

  it('skips a second delivery of the same idempotency key as a duplicate, without running the handler', async () => {
    await harness.deliver('harness.bookkeeping', InvoiceIssued.of('inv-2'));
    const again = await harness.deliver('harness.bookkeeping', InvoiceIssued.of('inv-2'));

    expect(again).toEqual({ kind: 'duplicate', idempotencyKey: 'invoice:inv-2' });
    expect(ledger.booked.filter((id) => id === 'inv-2')).toHaveLength(1);
    expect(harness.duplicates).toHaveLength(1);
  });

  it('retries a failing dependency after its delay, and the retry succeeds once the clock passes it', async () => {
    ledger.failNext = 1;
    const first = await harness.deliver('harness.bookkeeping', InvoiceIssued.of('inv-3'));
    if (first.kind !== 'retried') throw new Error(`expected a retry, got ${first.kind}`);
    expect(first.nextAttempt).toBe(2);
    // Full jitter: up to the 1 s the policy allows, in the delay levels' 100 ms steps.
    expect(first.delayMs).toBeLessThanOrEqual(1_000);
    expect(first.delayMs % 100).toBe(0);

    if (first.delayMs > 0) {
      await harness.advance(first.delayMs - 1);
      expect(harness.consumed.filter((d) => d.attempt === 2)).toHaveLength(0);
    }
    await harness.advance(1);
    const second = await harness.waitFor('consumed', (d) => d.attempt === 2);
    expect(second.outcome).toEqual({ kind: 'acked' });
    expect(ledger.booked).toContain('inv-3');
  });

  it('dead-letters once the attempts are spent, with the error of the last', async () => {
    ledger.failNext = 3;
    await harness.deliver('harness.bookkeeping', InvoiceIssued.of('inv-4'));
    await harness.advance(1_000);
    await harness.advance(1_000);

    const [dead] = harness.deadLettered;
    expect(dead.attempt).toBe(3);
    expect(dead.outcome).toEqual({
      kind: 'dead-lettered',
      reason: 'attempts-exhausted',
      errorClass: 'Error',
      errorMessage: 'the ledger is unavailable',
      attempts: 3,
    });
    expect(harness.retried.map((d) => d.attempt)).toEqual([1, 2]);
  });

  it.each([
    ['a body that is not JSON', '{"invoiceId":', 'malformed-json'],
    ['a payload failing validation', InvoiceIssued.of('inv-5', -1), 'validation-failed'],
    [
      'a payload with a forbidden key',
      '{"invoiceId":"x","amountCents":1,"__proto__":{"admin":true}}',
      'forbidden-key',
    ],
  ])('dead-letters %s at once, with its reason and no retry', async (_case, body, reason) => {
    const headers =
      typeof body === 'string' ? { 'rm-idempotency-key': 'raw-1', 'rm-schema-version': '1.0' } : {};
    const properties =
      typeof body === 'string' ? { type: 'invoice.issued', contentType: 'application/json' } : {};
    const outcome = await harness.deliver('harness.bookkeeping', body, headers, properties);

    expect(outcome).toMatchObject({ kind: 'dead-lettered', reason, attempts: 1 });
    expect(harness.retried).toHaveLength(0);
  });

  it("dead-letters a message the handler's guard refuses, without retrying it", async () => {
    const outcome = await harness.deliver('harness.bookkeeping', InvoiceIssued.of('blocked-1'));

    expect(outcome).toMatchObject({ kind: 'dead-lettered', reason: 'guard-refused' });
    expect(ledger.booked).not.toContain('blocked-1');
  });

  it('delivers what the app publishes to the consumers bound to it', async () => {
    const receipt = await harness.publish(InvoiceIssued.of('inv-6'));

    const handled = await harness.waitFor('consumed', (d) => d.messageId === receipt.messageId);
    expect(handled).toMatchObject({
      queue: 'harness.bookkeeping',
      type: 'invoice.issued',
      outcome: { kind: 'acked' },
    });
    await harness.settled();
    expect(harness.published.map((m) => m.type)).toEqual(['invoice.issued', 'invoice.booked']);
  });

  it('says what it recorded when what a test waits for never comes', async () => {
    await expect(harness.waitFor('deadLettered', () => true, { timeoutMs: 20 })).rejects.toThrow(
      /timed out after 20 ms waiting for a matching record in 'deadLettered'; recorded: 0 published, 0 consumed/,
    );
  });
});
