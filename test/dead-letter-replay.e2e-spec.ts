import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import {
  Consume,
  HEADERS,
  type MessageContext,
  MessageType,
  NonRetryableError,
} from 'nestjs-reliable-messaging';
import {
  DeadLetterOperations,
  InvalidDeadLetterQueryError,
  ReliableMessagingAdminModule,
} from 'nestjs-reliable-messaging-admin';
import { InboxStats, DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'ship.requested', idempotencyKey: (m: ShipRequested) => `ship:${m.orderId}` })
class ShipRequested {
  @IsString() orderId!: string;
  @IsInt() quantity!: number;
}

class CarrierDown extends Error {}
class BadQuantity extends NonRetryableError {}

const QUEUE = uniqueQueue('shipping');
const DLQ = `${QUEUE}.dlq`;
const ACTOR = 'spec-operator';

@Injectable()
class ShippingHandler {
  readonly calls: Array<{ orderId: string; attempt: number }> = [];
  readonly carrierDown = new Set<string>();

  // NOTE: a classic queue, whose depth the broker reports at once (a quorum queue's lags).
  @Consume({
    queue: QUEUE,
    queueType: 'classic',
    messageTypes: ['ship.requested', 'ship.rush'],
    retry: { maxAttempts: 2, initialDelayMs: 0 },
  })
  async onShip(event: ShipRequested, ctx: MessageContext): Promise<void> {
    this.calls.push({ orderId: event.orderId, attempt: ctx.attempt });
    if (this.carrierDown.has(event.orderId)) throw new CarrierDown('the carrier is down');
    if (event.quantity <= 0) throw new BadQuantity(`quantity must be positive, got ${event.quantity}`);
    await ctx.manager?.query('INSERT INTO shipments (order_id, quantity) VALUES ($1, $2)', [
      event.orderId,
      event.quantity,
    ]);
  }

  of(orderId: string): number[] {
    return this.calls.filter((call) => call.orderId === orderId).map((call) => call.attempt);
  }
}

describe('replaying dead letters: by filter, by time window, edited, and safely twice', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let handler: ShippingHandler;
  let operations: DeadLetterOperations;

  beforeAll(async () => {
    db = await createMessagingDatabase(
      ['CREATE TABLE shipments (order_id text NOT NULL, quantity int NOT NULL)'],
      { admin: true },
    );
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [ShippingHandler],
      imports: [ReliableMessagingAdminModule],
      options: { dataSource: db.dataSource, outbox: { relay: false } },
    });
    handler = app.get(ShippingHandler);
    operations = app.get(DeadLetterOperations);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  async function ship(orderId: string, quantity = 1, type = 'ship.requested'): Promise<void> {
    await app.publisher.publishNow(
      { type, payload: { orderId, quantity } },
      { idempotencyKey: `ship:${orderId}` },
    );
  }

  async function dlqDepth(depth: number): Promise<void> {
    await waitFor(`${depth} dead letter(s)`, async () => (await broker.queueDepth(DLQ)) === depth, {
      timeoutMs: 5_000,
    });
  }

  async function shipped(orderId: string): Promise<number[]> {
    const rows = await db.dataSource.query<
      Array<{
        quantity: number;
      }>
    >('SELECT quantity FROM shipments WHERE order_id = $1', [orderId]);
    return rows.map((row) => row.quantity);
  }

  it('replays only the dead letters a filter selects (error class, type), after a dry run that changes nothing', async () => {
    handler.carrierDown.add('f-1').add('f-2');
    await ship('f-1');
    await ship('f-2', 1, 'ship.rush');
    await ship('f-3', 0);
    await dlqDepth(3);
    expect(handler.of('f-1')).toEqual([1, 2]);

    const dryRun = await operations.replay(
      { queue: QUEUE, errorClass: 'CarrierDown', type: 'ship.rush' },
      { actor: ACTOR, dryRun: true },
    );
    expect(dryRun).toMatchObject({ dryRun: true, failures: [], auditId: undefined });
    expect(dryRun.messageIds).toHaveLength(1);
    expect(await broker.queueDepth(DLQ)).toBe(3);

    handler.carrierDown.clear();
    const replayed = await operations.replay({ queue: QUEUE, errorClass: 'CarrierDown' }, { actor: ACTOR });

    expect(replayed.messageIds).toHaveLength(2);
    expect(replayed.failures).toEqual([]);
    await waitFor(
      'both replays to ship',
      async () => (await shipped('f-1')).length + (await shipped('f-2')).length === 2,
    );
    expect(handler.of('f-1')).toEqual([1, 2, 1]);
    const [left] = (await operations.list({ queue: QUEUE })).deadLetters;
    expect(left).toMatchObject({
      type: 'ship.requested',
      errorClass: 'BadQuantity',
      reason: 'non-retryable',
    });
    const shown = await operations.show(left.messageId as string, QUEUE);
    expect(JSON.parse(shown.body.toString())).toEqual({ orderId: 'f-3', quantity: 0 });
  });

  it('replays a time window of dead letters: since and until select by the time each was dead-lettered', async () => {
    await operations.purge({ queue: QUEUE, all: true }, { actor: ACTOR });
    handler.carrierDown.add('w-early').add('w-late');
    await ship('w-early');
    await dlqDepth(1);
    // The boundary falls after the time w-early's dead letter records (`until` excludes that instant) and before
    // w-late fails: the clock only has to pass that millisecond.
    const [earlyDeadLetter] = (await operations.list({ queue: QUEUE })).deadLetters;
    expect(earlyDeadLetter.deadLetteredAt).toBeInstanceOf(Date);
    const earlyAt = (earlyDeadLetter.deadLetteredAt as Date).getTime();
    await waitFor('the clock to pass the time w-early was dead-lettered', () => Date.now() > earlyAt, {
      intervalMs: 1,
    });
    const boundary = new Date();
    await ship('w-late');
    await dlqDepth(2);
    handler.carrierDown.clear();

    const early = await operations.replay({ queue: QUEUE, until: boundary }, { actor: ACTOR });
    const late = await operations.replay({ queue: QUEUE, since: boundary }, { actor: ACTOR });

    expect(early.messageIds).toHaveLength(1);
    expect(late.messageIds).toHaveLength(1);
    expect(early.messageIds[0]).not.toBe(late.messageIds[0]);
    await waitFor(
      'both to ship',
      async () => (await shipped('w-early')).length + (await shipped('w-late')).length === 2,
    );
    expect(await broker.queueDepth(DLQ)).toBe(0);
  });

  it('edits a body and replays it; an edit that is not valid JSON is refused and the dead letter stays', async () => {
    await ship('e-1', -3);
    await dlqDepth(1);
    const [deadLetter] = (await operations.list({ queue: QUEUE })).deadLetters;
    const messageId = deadLetter.messageId as string;

    await expect(
      operations.editAndReplay(QUEUE, messageId, Buffer.from('{"orderId": "e-1", '), { actor: ACTOR }),
    ).rejects.toThrow(InvalidDeadLetterQueryError);
    expect(await broker.queueDepth(DLQ)).toBe(1);

    const preview = await operations.editAndReplay(
      QUEUE,
      messageId,
      Buffer.from('{"orderId":"e-1","quantity":3}'),
      {
        actor: ACTOR,
        dryRun: true,
      },
    );
    expect(preview.messageIds).toEqual([messageId]);
    expect(await broker.queueDepth(DLQ)).toBe(1);

    const edited = await operations.editAndReplay(
      QUEUE,
      messageId,
      Buffer.from('{"orderId":"e-1","quantity":3}'),
      {
        actor: ACTOR,
        note: 'TICKET-42: quantity typo',
      },
    );
    expect(edited.messageIds).toEqual([messageId]);
    await waitFor('the edited message to ship', async () => (await shipped('e-1')).length === 1);
    expect(await shipped('e-1')).toEqual([3]);
    expect(await broker.queueDepth(DLQ)).toBe(0);
  });

  it('applies a dead letter replayed twice only once (dedup), and a replay that fails again keeps its history', async () => {
    handler.carrierDown.add('r-1').add('r-2');
    await ship('r-1');
    await ship('r-2');
    await dlqDepth(2);
    // A second copy of r-1's dead letter, as a replay cut short between its publish and its removal leaves one.
    const copies = await broker.getAll(DLQ);
    for (const copy of [...copies, copies.find((m) => m.content.toString().includes('r-1'))]) {
      await broker.publishRaw({ queue: DLQ }, copy!.content, copy!.properties);
    }
    const [r2] = (await operations.list({ queue: QUEUE, text: '"r-2"' })).deadLetters;
    handler.carrierDown.delete('r-1');

    const replayed = await operations.replay({ queue: QUEUE, text: '"r-1"' }, { actor: ACTOR });
    const again = await operations.replay({ queue: QUEUE, text: '"r-2"' }, { actor: ACTOR });

    expect(replayed.messageIds).toHaveLength(2);
    expect(new Set(replayed.messageIds).size).toBe(1);
    await waitFor(
      'the second copy of r-1 to be skipped as a duplicate',
      () => app.get(InboxStats).duplicatesOf(QUEUE) === 1,
    );
    expect(handler.of('r-1')).toEqual([1, 2, 1]);
    expect(await shipped('r-1')).toEqual([1]);
    expect(again.messageIds).toHaveLength(1);
    await dlqDepth(1);
    const [failedAgain] = (await operations.list({ queue: QUEUE })).deadLetters;
    expect(handler.of('r-2')).toEqual([1, 2, 1, 2]);
    expect(failedAgain).toMatchObject({
      messageId: r2.messageId,
      deadLetterCount: 2,
      attempts: 2,
      reason: 'attempts-exhausted',
    });
    expect(failedAgain.firstFailureAt).toEqual(r2.firstFailureAt);
    expect(failedAgain.deadLetteredAt!.getTime()).toBeGreaterThan(r2.deadLetteredAt!.getTime());
    expect(failedAgain.headers[DEAD_LETTER_HEADERS.replayedAt]).toEqual(expect.any(String));
    expect(failedAgain.headers[HEADERS.idempotencyKey]).toBe('ship:r-2');
  });

  it('replays a dead letter whose header claims another queue to the queue of its dead-letter queue', async () => {
    const claimed = `${QUEUE}-elsewhere`;
    await broker.publishRaw({ queue: DLQ }, '{"orderId":"claimed-1","quantity":1}', {
      messageId: 'claimed-1',
      type: 'ship.requested',
      contentType: 'application/json',
      headers: {
        [DEAD_LETTER_HEADERS.queue]: claimed,
        [DEAD_LETTER_HEADERS.reason]: 'non-retryable',
      },
    });
    expect((await operations.show('claimed-1', QUEUE)).claimedQueue).toBe(claimed);

    const result = await operations.replay({ queue: QUEUE, messageIds: ['claimed-1'] }, { actor: ACTOR });

    expect(result).toMatchObject({ messageIds: ['claimed-1'], failures: [] });
    // It reached QUEUE's consumer: handled, or dead-lettered there again by the module, with its own header.
    await waitFor(
      'the replayed message in its own queue',
      async () =>
        handler.of('claimed-1').length > 0 ||
        (await operations.list({ queue: QUEUE, messageIds: ['claimed-1'] })).deadLetters.some(
          (each) => each.claimedQueue === undefined,
        ),
    );
  });

  it('refuses a replay with no selection, and audits every replay, edit and purge in rm_dead_letter_audit', async () => {
    await expect(operations.replay({ queue: QUEUE }, { actor: ACTOR })).rejects.toThrow(/needs a selection/);

    const rows = await db.dataSource.query<Array<Record<string, unknown>>>(
      `SELECT action, actor, queue, message_count AS "count", outcome, details FROM rm_dead_letter_audit ORDER BY started_at`,
    );
    expect(rows.map((row) => [row.action, row.count, row.outcome])).toEqual([
      ['replay', 2, 'completed'],
      ['purge', 1, 'completed'],
      ['replay', 1, 'completed'],
      ['replay', 1, 'completed'],
      ['edit-replay', 1, 'completed'],
      ['replay', 2, 'completed'],
      ['replay', 1, 'completed'],
      ['replay', 1, 'completed'],
    ]);
    expect(rows.every((row) => row.actor === ACTOR && row.queue === QUEUE)).toBe(true);
    expect(rows[4].details).toMatchObject({
      note: 'TICKET-42: quantity typo',
      bodySha256After: expect.any(String),
    });
  });
});
