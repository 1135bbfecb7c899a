import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsString } from 'class-validator';
import { MessageType } from 'nestjs-reliable-messaging';
import { PublisherConnection } from 'nestjs-reliable-messaging/operations';
import { installFaultPoints, type RelayOutcome } from 'nestjs-reliable-messaging/testing';
import { outboxRows, type MessagingDatabase, type OutboxRowView } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';

@MessageType({ type: 'shop.order-placed', idempotencyKey: (m: OrderPlaced) => `order-placed:${m.orderId}` })
class OrderPlaced {
  @IsString() orderId!: string;
}

const ROWS = 20;
/**
 * How long the held batch takes to be marked once confirmed, as a slow database would make it: far longer than
 * the shutdown steps before the relay's take, so a shutdown that did not wait for the batch would reach the
 * connections' close while its rows are still unmarked.
 */
const SLOW_MARK_MS = 1_000;

/**
 * The relay's part of graceful shutdown, judged by the state it leaves rather than by its log: a batch the broker
 * has confirmed but whose rows are not yet marked when shutdown begins is marked before the connections close.
 */
describe('outbox relay at shutdown', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let removeFaultPoints: () => void;
  let held: { outcomes: readonly RelayOutcome[] } | undefined;
  let onHeld: () => void;
  const batchHeld = new Promise<void>((resolve) => (onHeld = resolve));

  beforeAll(async () => {
    setup = await outboxSetup({ auditBinding: 'shop.#' });
    ({ db, broker } = setup);
    removeFaultPoints = installFaultPoints({
      beforeMarkRelayed: async (outcomes) => {
        if (held || outcomes.length === 0) return;
        held = { outcomes };
        onHeld();
        await new Promise((resolve) => setTimeout(resolve, SLOW_MARK_MS));
      },
    });
    app = await MessagingTestApp.start(broker, {
      options: {
        exchange: setup.exchange,
        dataSource: db.dataSource,
        consumersEnabled: false,
        outbox: { concurrency: 1, batchSize: ROWS },
      },
    });
  });

  afterAll(async () => {
    removeFaultPoints?.();
    await setup?.close();
  });

  it('marks the batch in flight published before its connections close: the broker holds every row, none is left pending', async () => {
    const publisherConnection = app.get(PublisherConnection);
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called back with .call(publisherConnection)
    const close = publisherConnection.close;
    let atClose: OutboxRowView[] | undefined;
    publisherConnection.close = async function (this: PublisherConnection) {
      atClose = await outboxRows(db.dataSource);
      return close.call(this);
    };

    await db.dataSource.transaction(async (manager) => {
      for (let n = 0; n < ROWS; n++)
        await app.publisher.publish(Object.assign(new OrderPlaced(), { orderId: `drain-${n}` }), { manager });
    });
    await batchHeld;
    // The batch is in flight: every row confirmed by the broker, none marked yet.
    expect(held?.outcomes.map((outcome) => outcome.outcome)).toEqual(Array(ROWS).fill('published'));
    expect((await outboxRows(db.dataSource)).map((row) => row.status)).toEqual(Array(ROWS).fill('pending'));

    await app.close();
    const afterClose = await outboxRows(db.dataSource);

    expect(atClose?.map((row) => row.status)).toEqual(Array(ROWS).fill('published'));
    expect(afterClose.map((row) => row.status)).toEqual(Array(ROWS).fill('published'));
    const relayed = await broker.getAll(setup.audit);
    expect(relayed.map((message) => message.properties.messageId as string).sort()).toEqual(
      afterClose.map((row) => row.messageId).sort(),
    );
    // No session is left holding a claim: a row locked by an open transaction would be skipped here.
    const unlocked = await db.dataSource.query<unknown[]>('SELECT id FROM rm_outbox FOR UPDATE SKIP LOCKED');
    expect(unlocked).toHaveLength(ROWS);
    expect(app.logger.find('log', /^outbox relay stopped: 20 message\(s\) published, 0 parked/)).toHaveLength(
      1,
    );
    expect(app.logger.find('warn', /shutdown step|outbox relay/)).toEqual([]);
  });
});
