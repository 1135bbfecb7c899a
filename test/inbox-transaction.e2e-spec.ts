import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsBoolean, IsString } from 'class-validator';
import { DataSource, type EntitySubscriberInterface, type QueryRunner } from 'typeorm';
import { Consume, MessagePublisher, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { RELIABLE_MESSAGING_ENTITIES } from 'nestjs-reliable-messaging/typeorm';
import { createMessagingDatabase, outboxRows, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, queueCounts, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'ledger.entry-posted', idempotencyKey: (m: EntryPosted) => `entry:${m.entryId}` })
class EntryPosted {
  @IsString() entryId!: string;
  /** The first attempt writes a check whose deferred foreign key fails at COMMIT. */
  @IsBoolean() failAtCommitOnce!: boolean;
  /** The handler's nested transaction (a savepoint) throws after writing its note, and the handler carries on. */
  @IsBoolean() refuseNote!: boolean;
}

@MessageType({ type: 'ledger.entry-booked', idempotencyKey: (m: EntryBooked) => `booked:${m.entryId}` })
class EntryBooked {
  @IsString() entryId!: string;
}

const posted = (entryId: string, options: Partial<EntryPosted> = {}): EntryPosted =>
  Object.assign(new EntryPosted(), { entryId, failAtCommitOnce: false, refuseNote: false, ...options });

const LEDGER = uniqueQueue('ledger');

/** What one attempt saw of its transaction. */
interface AttemptSeen {
  entryId: string;
  attempt: number;
  isolation: string;
  runner?: QueryRunner;
}

/**
 * Books an entry in the inbox transaction (ctx.manager): its row, its EntryBooked (an outbox row), a note in a
 * nested transaction, and on request a check that only the commit refuses.
 */
@Injectable()
class LedgerHandler {
  readonly attempts: AttemptSeen[] = [];

  constructor(private readonly publisher: MessagePublisher) {}

  @Consume({
    queue: LEDGER,
    queueType: 'classic',
    concurrency: 1,
    retry: { initialDelayMs: 20, maxDelayMs: 50 },
  })
  async onEntryPosted(event: EntryPosted, ctx: MessageContext): Promise<void> {
    const manager = ctx.manager;
    if (!manager) throw new Error('the inbox transaction is missing');
    const [{ isolation }] = await manager.query<Array<{ isolation: string }>>(
      `SELECT current_setting('transaction_isolation') AS isolation`,
    );
    this.attempts.push({
      entryId: event.entryId,
      attempt: ctx.attempt,
      isolation,
      runner: manager.queryRunner,
    });
    await manager.query('INSERT INTO entries (entry_id, attempt) VALUES ($1, $2)', [
      event.entryId,
      ctx.attempt,
    ]);
    await this.publisher.publish(Object.assign(new EntryBooked(), { entryId: event.entryId }));
    await manager
      .transaction(async (inner) => {
        await inner.query('INSERT INTO notes (entry_id) VALUES ($1)', [event.entryId]);
        if (event.refuseNote) throw new Error('the note is refused');
      })
      .catch(() => undefined);
    if (event.failAtCommitOnce && ctx.attempt === 1) {
      await manager.query(`INSERT INTO checks (entry_id, account) VALUES ($1, 'no-such-account')`, [
        event.entryId,
      ]);
    }
  }
}

/** Records which query runners' transactions started, committed and rolled back. */
class TransactionEvents implements EntitySubscriberInterface {
  readonly seen: Array<{ event: 'start' | 'commit' | 'rollback'; runner: QueryRunner }> = [];

  afterTransactionStart({ queryRunner }: { queryRunner: QueryRunner }): void {
    this.seen.push({ event: 'start', runner: queryRunner });
  }

  afterTransactionCommit({ queryRunner }: { queryRunner: QueryRunner }): void {
    this.seen.push({ event: 'commit', runner: queryRunner });
  }

  afterTransactionRollback({ queryRunner }: { queryRunner: QueryRunner }): void {
    this.seen.push({ event: 'rollback', runner: queryRunner });
  }

  of(runner: QueryRunner | undefined): string[] {
    return this.seen.filter((seen) => seen.runner === runner).map((seen) => seen.event);
  }
}

async function rows<T>(dataSource: DataSource, sql: string, params: unknown[] = []): Promise<T[]> {
  return dataSource.query<T[]>(sql, params);
}

describe('inbox: the handler runs in one transaction with its inbox row', () => {
  let db: MessagingDatabase;
  let dataSource: DataSource;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let ledger: LedgerHandler;
  const events = new TransactionEvents();

  beforeAll(async () => {
    db = await createMessagingDatabase([
      'CREATE TABLE accounts (id text PRIMARY KEY)',
      'CREATE TABLE entries (entry_id text NOT NULL, attempt int NOT NULL)',
      'CREATE TABLE notes (entry_id text NOT NULL)',
      'CREATE TABLE checks (entry_id text NOT NULL, account text NOT NULL ' +
        'REFERENCES accounts (id) DEFERRABLE INITIALLY DEFERRED)',
    ]);
    // The app's own DataSource: a default isolation level, and a subscriber of its own to transaction events.
    dataSource = new DataSource({
      type: 'postgres',
      url: db.database.url,
      entities: [...RELIABLE_MESSAGING_ENTITIES],
      isolationLevel: 'REPEATABLE READ',
      poolSize: 4,
      logging: false,
    });
    await dataSource.initialize();
    dataSource.subscribers.push(events);
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [LedgerHandler],
      options: { dataSource, outbox: { relay: false } },
    });
    ledger = app.get(LedgerHandler);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    if (dataSource?.isInitialized) await dataSource.destroy();
    await db?.drop();
  });

  it('rolls back the effect, the outgoing message and the inbox row when the commit fails, acks nothing, and the retry applies once', async () => {
    await app.publisher.publishNow(posted('e-1', { failAtCommitOnce: true }));

    await waitFor('the retry to commit', async () => {
      const counts = await queueCounts(LEDGER);
      return (
        ledger.attempts.some((seen) => seen.entryId === 'e-1' && seen.attempt === 2) &&
        counts.ready + counts.unacked === 0
      );
    });

    expect(await rows(dataSource, `SELECT entry_id, attempt FROM entries WHERE entry_id = 'e-1'`)).toEqual([
      { entry_id: 'e-1', attempt: 2 },
    ]);
    expect(await rows(dataSource, `SELECT idempotency_key AS key FROM rm_inbox`)).toEqual([
      { key: 'entry:e-1' },
    ]);
    expect((await outboxRows(dataSource)).map((row) => row.body)).toEqual(['{"entryId":"e-1"}']);
    expect(await broker.queueDepth(`${LEDGER}.dlq`)).toBe(0);
    const [first, second] = ledger.attempts.filter((seen) => seen.entryId === 'e-1');
    // The handler's transaction, with its nested one (a savepoint) inside: the DataSource's subscribers hear both.
    expect(events.of(first.runner)).toEqual(['start', 'start', 'commit', 'rollback']);
    expect(events.of(second.runner)).toEqual(['start', 'start', 'commit', 'commit']);
  });

  it('commits a nested transaction as a savepoint of the handler’s, and rolls back only that savepoint when it fails', async () => {
    await app.publisher.publishNow(posted('e-2'));
    await app.publisher.publishNow(posted('e-3', { refuseNote: true }));

    await waitFor('both entries booked', async () => {
      const booked = await rows(
        dataSource,
        `SELECT 1 FROM rm_inbox WHERE idempotency_key IN ('entry:e-2', 'entry:e-3')`,
      );
      return booked.length === 2;
    });

    expect(
      await rows(dataSource, `SELECT entry_id FROM entries WHERE entry_id IN ('e-2', 'e-3') ORDER BY 1`),
    ).toEqual([{ entry_id: 'e-2' }, { entry_id: 'e-3' }]);
    expect(await rows(dataSource, `SELECT entry_id FROM notes WHERE entry_id IN ('e-2', 'e-3')`)).toEqual([
      { entry_id: 'e-2' },
    ]);
  });

  it('opens the handler’s transaction at the DataSource’s isolation level', () => {
    expect(new Set(ledger.attempts.map((seen) => seen.isolation))).toEqual(new Set(['repeatable read']));
  });

  it('acknowledges a copy without running the handler, and its empty transaction commits', async () => {
    const before = ledger.attempts.length;
    await app.publisher.publishNow(posted('e-2'));

    await waitFor('the copy to be acknowledged', async () => {
      const counts = await queueCounts(LEDGER);
      return counts.ready + counts.unacked === 0;
    });

    expect(ledger.attempts.length).toBe(before);
    expect(await rows(dataSource, `SELECT count(*)::int AS n FROM entries WHERE entry_id = 'e-2'`)).toEqual([
      { n: 1 },
    ]);
  });

  it('leaves the connection usable after the inbox row itself is refused', async () => {
    // The refused row fails the statement sent with BEGIN; the next message on the same connection must still work.
    await dataSource.query(
      `ALTER TABLE rm_inbox ADD CONSTRAINT refuse_poison CHECK (idempotency_key <> 'entry:poison')`,
    );
    try {
      await app.publisher.publishNow(posted('poison'));
      await app.publisher.publishNow(posted('e-4'));

      await waitFor('e-4 booked', async () => {
        const booked = await rows(dataSource, `SELECT 1 FROM rm_inbox WHERE idempotency_key = 'entry:e-4'`);
        return booked.length === 1;
      });
      await waitFor('poison dead-lettered', async () => (await broker.queueDepth(`${LEDGER}.dlq`)) === 1);

      expect(ledger.attempts.filter((seen) => seen.entryId === 'poison')).toEqual([]);
      expect(
        await rows(dataSource, `SELECT entry_id FROM entries WHERE entry_id IN ('poison', 'e-4')`),
      ).toEqual([{ entry_id: 'e-4' }]);
    } finally {
      await dataSource.query(`ALTER TABLE rm_inbox DROP CONSTRAINT refuse_poison`);
    }
  });
});
