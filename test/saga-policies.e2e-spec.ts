import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsOptional, IsString } from 'class-validator';
import { MessageType, Saga, SagaInstances, SagaStep, type SagaContext } from 'nestjs-reliable-messaging';
import { DEAD_LETTER_HEADERS } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'lease.opened', idempotencyKey: (m: LeaseOpened) => `opened:${m.leaseId}` })
class LeaseOpened {
  @IsString() leaseId!: string;
}

@MessageType({ type: 'lease.noted', idempotencyKey: (m: LeaseNoted) => `noted:${m.leaseId}:${m.note}` })
class LeaseNoted {
  @IsString() leaseId!: string;
  @IsString() note!: string;
}

@MessageType({ type: 'lease.charged', idempotencyKey: (m: LeaseCharged) => `charged:${m.tag}` })
class LeaseCharged {
  @IsString() leaseId!: string;
  @IsString() tag!: string;
  /** Makes the step leave a state that is not plain JSON. */
  @IsOptional() @IsString() badState?: string;
}

@MessageType({ type: 'lease.closed', idempotencyKey: (m: LeaseClosed) => `closed:${m.leaseId}` })
class LeaseClosed {
  @IsString() leaseId!: string;
}

const openedLease = (leaseId: string) => Object.assign(new LeaseOpened(), { leaseId });
const noted = (leaseId: string, note: string) => Object.assign(new LeaseNoted(), { leaseId, note });
const charged = (leaseId: string, tag: string, badState?: string) =>
  Object.assign(new LeaseCharged(), { leaseId, tag, badState });
const closed = (leaseId: string) => Object.assign(new LeaseClosed(), { leaseId });

interface LeaseState {
  notes: string[];
  charges: number;
  when?: unknown;
}

const SAGA = uniqueQueue('lease');
const NOTED = `${SAGA}.lease.noted`;
const CHARGED = `${SAGA}.lease.charged`;

/**
 * Opened starts an instance; a note for a lease that does not exist is ignored, a charge for one is
 * dead-lettered; closed completes it; after that a note is ignored (and recorded) and a charge dead-lettered.
 */
@Saga({ name: SAGA, initialState: (): LeaseState => ({ notes: [], charges: 0 }) })
class Lease {
  readonly runs: string[] = [];

  @SagaStep(LeaseOpened, { correlate: (m) => m.leaseId, onMissing: 'start', queueType: 'classic' })
  onOpened(event: LeaseOpened): void {
    this.runs.push(`opened:${event.leaseId}`);
  }

  @SagaStep(LeaseNoted, { correlate: (m) => m.leaseId, onMissing: 'ignore', queueType: 'classic' })
  onNoted(event: LeaseNoted, saga: SagaContext<LeaseState>): void {
    this.runs.push(`noted:${event.leaseId}:${event.note}`);
    saga.state.notes.push(event.note);
  }

  @SagaStep(LeaseCharged, {
    correlate: (m) => m.leaseId,
    onMissing: 'dead-letter',
    onCompleted: 'dead-letter',
    queueType: 'classic',
  })
  onCharged(event: LeaseCharged, saga: SagaContext<LeaseState>): void {
    this.runs.push(`charged:${event.leaseId}:${event.tag}`);
    saga.state.charges += 1;
    if (event.badState === 'date') saga.state.when = new Date();
    if (event.badState === 'large') saga.state.when = 'x'.repeat(70_000);
  }

  @SagaStep(LeaseClosed, { correlate: (m) => m.leaseId, queueType: 'classic' })
  onClosed(_event: LeaseClosed, saga: SagaContext<LeaseState>): void {
    saga.complete();
  }
}

describe('saga policies: a message for an instance that does not exist, or has completed, meets its declared policy', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let lease: Lease;
  let instances: SagaInstances;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [Lease],
      options: { dataSource: db.dataSource, outbox: { relay: false } },
    });
    lease = app.get(Lease);
    instances = app.get(SagaInstances);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  /** Whether the message with this idempotency key was handled: its inbox row commits with the step's outcome. */
  const handled = (idempotencyKey: string): Promise<void> =>
    waitFor(`message ${idempotencyKey} handled`, async () => {
      const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(
        'SELECT count(*)::int AS n FROM rm_inbox WHERE idempotency_key = $1',
        [idempotencyKey],
      );
      return n === 1;
    });

  /** The next dead letter of `queue`, with its reason. */
  const deadLetter = async (queue: string): Promise<{ reason: unknown; body: Record<string, unknown> }> => {
    const [message] = await broker.waitForMessages(`${queue}.dlq`, 1);
    return {
      reason: message.properties.headers?.[DEAD_LETTER_HEADERS.reason],
      body: JSON.parse(message.content.toString()) as Record<string, unknown>,
    };
  };

  const openLease = async (leaseId: string): Promise<void> => {
    await app.publisher.publishNow(openedLease(leaseId));
    await waitFor(
      `lease ${leaseId} opened`,
      async () => (await instances.find(SAGA, leaseId))?.version === 1,
    );
  };

  it("starts an instance for a message of a step with onMissing 'start'", async () => {
    await app.publisher.publishNow(openedLease('l-1'));
    await waitFor('l-1 started', async () => (await instances.find(SAGA, 'l-1'))?.status === 'active');
    expect(await instances.find(SAGA, 'l-1')).toMatchObject({ version: 1, state: { notes: [], charges: 0 } });
  });

  it("acknowledges a message of a step with onMissing 'ignore' without running it or starting an instance", async () => {
    await app.publisher.publishNow(noted('l-none', 'hello'));
    await handled('noted:l-none:hello');

    expect(lease.runs).not.toContain('noted:l-none:hello');
    expect(await instances.find(SAGA, 'l-none')).toBeUndefined();
    expect(await broker.queueDepth(`${NOTED}.dlq`)).toBe(0);
  });

  it("dead-letters a message of a step with onMissing 'dead-letter', reason saga-instance-missing", async () => {
    await app.publisher.publishNow(charged('l-ghost', 'ghost'));
    const letter = await deadLetter(CHARGED);

    expect(letter).toMatchObject({ reason: 'saga-instance-missing', body: { leaseId: 'l-ghost' } });
    expect(lease.runs).not.toContain('charged:l-ghost:ghost');
    expect(await instances.find(SAGA, 'l-ghost')).toBeUndefined();
  });

  it('ignores a late message for a completed instance (recorded in its history) or dead-letters it, per onCompleted', async () => {
    await openLease('l-2');
    await app.publisher.publishNow(closed('l-2'));
    await waitFor('l-2 completed', async () => (await instances.find(SAGA, 'l-2'))?.status === 'completed');

    await app.publisher.publishNow(noted('l-2', 'late'));
    await handled('noted:l-2:late');
    await app.publisher.publishNow(charged('l-2', 'late'));
    const letter = await deadLetter(CHARGED);

    expect(letter).toMatchObject({ reason: 'saga-instance-completed', body: { leaseId: 'l-2' } });
    expect(lease.runs.filter((run) => run.startsWith('noted:l-2') || run.startsWith('charged:l-2'))).toEqual(
      [],
    );
    const instance = await instances.find(SAGA, 'l-2');
    expect(instance).toMatchObject({ status: 'completed', version: 2, state: { notes: [], charges: 0 } });
    expect(instance?.history.map((entry) => [entry.version, entry.step, entry.outcome])).toEqual([
      [1, 'Lease.onOpened', 'started'],
      [2, 'Lease.onClosed', 'completed'],
      [2, 'Lease.onNoted', 'ignored'],
    ]);
  });

  it('prunes completed instances with their history; a message for a pruned one meets onMissing', async () => {
    await openLease('l-3');
    await openLease('l-4');
    await app.publisher.publishNow(closed('l-3'));
    await waitFor('l-3 completed', async () => (await instances.find(SAGA, 'l-3'))?.status === 'completed');

    const pruned = await instances.pruneCompleted(0);

    expect(pruned).toBeGreaterThanOrEqual(1);
    expect(await instances.find(SAGA, 'l-3')).toBeUndefined();
    expect(await instances.find(SAGA, 'l-4')).toMatchObject({ status: 'active' });
    const [{ orphans }] = await db.dataSource.query<Array<{ orphans: number }>>(
      'SELECT count(*)::int AS orphans FROM rm_saga_history h WHERE NOT EXISTS (SELECT 1 FROM rm_saga s WHERE s.id = h.saga_id)',
    );
    expect(orphans).toBe(0);
    await app.publisher.publishNow(charged('l-3', 'after-prune'));
    expect((await deadLetter(CHARGED)).reason).toBe('saga-instance-missing');
  });

  it.each([
    ['an empty key', ''],
    ['a key longer than 256 characters', 'k'.repeat(257)],
    ['a key with a control character', 'l-\u0007'],
  ])(
    'dead-letters a message whose correlation key is %s, reason saga-correlation-invalid',
    async (_case, key) => {
      await app.publisher.publishNow(charged(key, `bad-key-${key.length}`));
      const letter = await deadLetter(CHARGED);

      expect(letter.reason).toBe('saga-correlation-invalid');
      expect(lease.runs.filter((run) => run.includes(':bad-key-'))).toEqual([]);
    },
  );

  it.each([
    ['a Date in the state', 'date'],
    ['a state larger than maxStateBytes', 'large'],
  ])(
    'dead-letters a step that leaves %s, reason saga-state-invalid, and keeps the instance as it was',
    async (_case, badState) => {
      await openLease(`l-${badState}`);
      await app.publisher.publishNow(charged(`l-${badState}`, `bad-state-${badState}`, badState));
      const letter = await deadLetter(CHARGED);

      expect(letter.reason).toBe('saga-state-invalid');
      expect(lease.runs).toContain(`charged:l-${badState}:bad-state-${badState}`);
      expect(await instances.find(SAGA, `l-${badState}`)).toMatchObject({
        version: 1,
        state: { charges: 0 },
      });
    },
  );
});
