import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ConsumeMessage } from 'amqplib';
import type { QueryRunner } from 'typeorm';
import { OutboxStore } from 'nestjs-reliable-messaging/operations';
import type { MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import type { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

interface Step {
  tx: number;
  n: number;
}

/**
 * The messages one transaction writes without an ordering key leave the outbox in the order written, whatever
 * the relays do side by side: a second claim must not take a transaction's later rows while a first claim holds
 * its earlier ones (two claims split the rows of one transaction between them, and the second published first),
 * and a row waiting out a retry holds back the rest of its transaction. A transaction's only keyless message stays
 * keyless, so the common case costs the relay no key lock.
 */
describe('outbox: the keyless messages of one transaction leave in the order written', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let writer: MessagingTestApp;
  let store: OutboxStore;
  let exchange: string;

  beforeAll(async () => {
    setup = await outboxSetup({ auditBinding: 'steps.#' });
    ({ db, broker, exchange } = setup);
    writer = await MessagingTestApp.start(broker, {
      options: { exchange, dataSource: db.dataSource, outbox: { relay: false } },
    });
    store = writer.get(OutboxStore);
  });

  afterAll(async () => {
    await writer?.close();
    await setup?.close();
  });

  const step = (tx: number, n: number) => ({
    type: 'steps.step',
    payload: { tx, n },
    idempotencyKey: `step-${tx}-${n}`,
  });

  /** The transaction's rows, in id order: id and ordering key. */
  const rowsOf = async (tx: number): Promise<Array<{ id: string; key: string | null }>> =>
    db.dataSource.query(
      `SELECT id::text AS id, ordering_key AS key FROM rm_outbox WHERE (convert_from(body, 'UTF8')::jsonb->>'tx')::int = $1 ORDER BY rm_outbox.id`,
      [tx],
    );

  const withRunners = async (work: (a: QueryRunner, b: QueryRunner) => Promise<void>): Promise<void> => {
    const a = db.dataSource.createQueryRunner();
    const b = db.dataSource.createQueryRunner();
    try {
      await work(a, b);
    } finally {
      for (const runner of [a, b]) {
        await store.rollback(runner).catch(() => undefined);
        await runner.release();
      }
    }
  };

  it('keeps a second claim off the later rows of a transaction while a first claim holds its earlier ones', async () => {
    await db.dataSource.query('DELETE FROM rm_outbox');
    await db.dataSource.transaction((manager) =>
      writer.publisher.publishAll(
        Array.from({ length: 30 }, (_, n) => step(1, n)),
        { manager },
      ),
    );
    const rows = await rowsOf(1);
    expect(rows).toHaveLength(30);
    expect(new Set(rows.map((row) => row.key)).size).toBe(1);
    expect(rows[0].key).toMatch(/^rm-transaction:[0-9a-f-]{36}$/);

    await withRunners(async (first, second) => {
      const early = await store.claim(first, 10);
      expect(early.map((row) => row.id)).toEqual(rows.slice(0, 10).map((row) => row.id));

      // A relay claiming beside the first gets nothing of the transaction: it would publish rows 10 to 29 while
      // rows 0 to 9 still wait for their confirms.
      expect(await store.claim(second, 200)).toEqual([]);
      await store.rollback(second);

      // Once the first claim's rows are published, the next claim takes the rest, in order.
      await store.complete(
        first,
        early.map((row) => ({ id: row.id, outcome: 'published' as const })),
      );
      const rest = await store.claim(second, 200);
      expect(rest.map((row) => row.id)).toEqual(rows.slice(10).map((row) => row.id));
    });
  });

  it('holds back the rest of a transaction behind a row that waits out a retry', async () => {
    await db.dataSource.query('DELETE FROM rm_outbox');
    await db.dataSource.transaction((manager) =>
      writer.publisher.publishAll(
        Array.from({ length: 5 }, (_, n) => step(2, n)),
        { manager },
      ),
    );
    const rows = await rowsOf(2);

    await withRunners(async (first, second) => {
      const claimed = await store.claim(first, 10);
      expect(claimed).toHaveLength(5);
      // Row 0 published, row 1 refused (retried in an hour), rows 2 to 4 released untouched.
      await store.complete(first, [
        { id: rows[0].id, outcome: 'published' },
        { id: rows[1].id, outcome: 'failed', error: 'refused', retryInMs: 3_600_000 },
      ]);
      expect(await store.claim(second, 200)).toEqual([]);
    });
  });

  it('gives the keyless messages of separate publish() calls in one transaction one key, and leaves a lone one keyless', async () => {
    await db.dataSource.query('DELETE FROM rm_outbox');
    await db.dataSource.transaction(async (manager) => {
      await writer.publisher.publish(step(3, 0), { manager });
      await writer.publisher.publish(step(3, 1), { manager, orderingKey: 'account-7' });
      await writer.publisher.publish(step(3, 2), { manager });
      await writer.publisher.publishAll([step(3, 3), step(3, 4)], { manager });
    });
    await db.dataSource.transaction((manager) => writer.publisher.publish(step(4, 0), { manager }));
    // A transaction that rolled back leaves nothing behind for the next one on its connection.
    await db.dataSource
      .transaction(async (manager) => {
        await writer.publisher.publish(step(5, 0), { manager });
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    await db.dataSource.transaction((manager) => writer.publisher.publish(step(6, 0), { manager }));

    const keys = (await rowsOf(3)).map((row) => row.key);
    const group = keys[0];
    expect(group).toMatch(/^rm-transaction:/);
    expect(keys).toEqual([group, 'account-7', group, group, group]);
    expect((await rowsOf(4)).map((row) => row.key)).toEqual([null]);
    expect(await rowsOf(5)).toEqual([]);
    expect((await rowsOf(6)).map((row) => row.key)).toEqual([null]);
  });

  it("refuses an ordering key of the publisher's own that takes the transactions' prefix", async () => {
    await expect(
      db.dataSource.transaction((manager) =>
        writer.publisher.publish(step(7, 0), { manager, orderingKey: 'rm-transaction:mine' }),
      ),
    ).rejects.toThrow(/must not start with 'rm-transaction:'/);
    expect(await rowsOf(7)).toEqual([]);
  });

  it('delivers every transaction in the order written, with three relays sharing the outbox', async () => {
    await db.dataSource.query('DELETE FROM rm_outbox');
    const relays: MessagingTestApp[] = [];
    const channel = await broker.openChannel();
    const arrived: Step[] = [];
    try {
      for (let n = 0; n < 3; n++) {
        relays.push(
          await MessagingTestApp.start(broker, {
            options: { exchange, dataSource: db.dataSource, outbox: { pollIntervalMs: 50, batchSize: 7 } },
          }),
        );
      }
      const consumer = await channel.consume(setup.audit, (message: ConsumeMessage | null) => {
        if (!message) return;
        arrived.push(JSON.parse(message.content.toString()) as Step);
        channel.ack(message);
      });
      const TRANSACTIONS = 40;
      const PER_TRANSACTION = 25;
      await Promise.all(
        Array.from({ length: TRANSACTIONS }, (_, tx) =>
          db.dataSource.transaction((manager) =>
            writer.publisher.publishAll(
              Array.from({ length: PER_TRANSACTION }, (_, n) => step(100 + tx, n)),
              { manager },
            ),
          ),
        ),
      );
      const distinct = (): number => new Set(arrived.map((s) => `${s.tx}:${s.n}`)).size;
      await waitFor(
        () => `every message arrived (${distinct()} of ${TRANSACTIONS * PER_TRANSACTION})`,
        () => distinct() === TRANSACTIONS * PER_TRANSACTION,
        { timeoutMs: 60_000 },
      );
      await channel.cancel(consumer.consumerTag);

      // Per transaction, the first copy of each message arrives after the first copy of the one written before it.
      const seen = new Set<string>();
      const last = new Map<number, number>();
      const wrong: string[] = [];
      for (const { tx, n } of arrived) {
        if (seen.has(`${tx}:${n}`)) continue;
        seen.add(`${tx}:${n}`);
        if ((last.get(tx) ?? -1) > n) wrong.push(`transaction ${tx}: message ${n} after ${last.get(tx)}`);
        last.set(tx, n);
      }
      expect(wrong).toEqual([]);
    } finally {
      for (const relay of relays) await relay.close();
    }
  }, 90_000);
});
