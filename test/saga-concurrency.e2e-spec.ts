import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsInt, IsString } from 'class-validator';
import { MessageType, Saga, SagaInstances, SagaStep, type SagaContext } from 'nestjs-reliable-messaging';
import { MessagingMetrics } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'tally.opened', idempotencyKey: (m: TallyOpened) => `opened:${m.tallyId}:${m.tag}` })
class TallyOpened {
  @IsString() tallyId!: string;
  @IsString() tag!: string;
}

@MessageType({ type: 'tally.counted', idempotencyKey: (m: TallyCounted) => `counted:${m.tallyId}:${m.n}` })
class TallyCounted {
  @IsString() tallyId!: string;
  @IsInt() n!: number;
}

/** The strict saga's own message types, so that neither saga sees the other's messages. */
@MessageType({ type: 'strict.opened', idempotencyKey: (m: StrictOpened) => `opened:${m.tallyId}:${m.tag}` })
class StrictOpened extends TallyOpened {}

@MessageType({ type: 'strict.counted', idempotencyKey: (m: StrictCounted) => `counted:${m.tallyId}:${m.n}` })
class StrictCounted extends TallyCounted {}

const opened = (tallyId: string, tag: string): TallyOpened =>
  Object.assign(new TallyOpened(), { tallyId, tag });
const counted = (tallyId: string, n: number): TallyCounted =>
  Object.assign(new TallyCounted(), { tallyId, n });

interface TallyState {
  opens: number;
  count: number;
}

/** What the steps of one saga saw: every run, and the attempt each ran as. */
class Runs {
  readonly opens: number[] = [];
  readonly counts: number[] = [];
}

/**
 * Each step holds its transaction open a little after reading the instance (`pg_sleep`), so that steps for one
 * instance running side by side read the same version and race to write it.
 */
async function holdTheRead(saga: SagaContext<TallyState>, seconds: number): Promise<void> {
  await saga.manager?.query('SELECT pg_sleep($1)', [seconds]);
}

const TALLY = uniqueQueue('tally');
const STRICT = uniqueQueue('strict-tally');
const COUNTERS = 40;

@Saga({ name: TALLY, initialState: (): TallyState => ({ opens: 0, count: 0 }) })
class Tally {
  readonly runs = new Runs();

  @SagaStep(TallyOpened, {
    correlate: (m) => m.tallyId,
    onMissing: 'start',
    queueType: 'classic',
    concurrency: 2,
  })
  async onOpened(_event: TallyOpened, saga: SagaContext<TallyState>): Promise<void> {
    this.runs.opens.push(saga.attempt);
    await holdTheRead(saga, 0.1);
    saga.state.opens += 1;
  }

  @SagaStep(TallyCounted, { correlate: (m) => m.tallyId, queueType: 'classic', concurrency: 8 })
  async onCounted(_event: TallyCounted, saga: SagaContext<TallyState>): Promise<void> {
    this.runs.counts.push(saga.attempt);
    await holdTheRead(saga, 0.005);
    saga.state.count += 1;
  }
}

/** No immediate re-run: a lost race is an ordinary failure, retried as the next attempt. */
@Saga({ name: STRICT, initialState: (): TallyState => ({ opens: 0, count: 0 }), maxConflictReruns: 0 })
class StrictTally {
  readonly runs = new Runs();

  @SagaStep(StrictOpened, { correlate: (m) => m.tallyId, onMissing: 'start', queueType: 'classic' })
  onOpened(_event: StrictOpened, saga: SagaContext<TallyState>): void {
    saga.state.opens += 1;
  }

  @SagaStep(StrictCounted, {
    correlate: (m) => m.tallyId,
    queueType: 'classic',
    concurrency: 2,
    retry: { maxAttempts: 3, initialDelayMs: 10, maxDelayMs: 20 },
  })
  async onCounted(_event: StrictCounted, saga: SagaContext<TallyState>): Promise<void> {
    this.runs.counts.push(saga.attempt);
    await holdTheRead(saga, 0.1);
    saga.state.count += 1;
  }
}

describe('saga concurrency: steps racing for one instance lose no update and spend no attempt', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let instances: SagaInstances;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [Tally, StrictTally],
      // Room for every step's transaction at once (2 + 8 + 10 + 2 handlers).
      options: { dataSource: await db.connect(24), outbox: { relay: false } },
    });
    instances = app.get(SagaInstances);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  const stateOf = async (saga: string, key: string) =>
    (await instances.find(saga, key, { historyLimit: 1000 }))!;

  it('makes one instance of two concurrent starts for one key; the loser runs again as a continue, as attempt 1', async () => {
    const runs = app.get(Tally).runs;
    await Promise.all([
      app.publisher.publishNow(opened('t-1', 'a')),
      app.publisher.publishNow(opened('t-1', 'b')),
    ]);
    await waitFor('both opens applied', async () => (await instances.find(TALLY, 't-1'))?.version === 2);

    const [{ n }] = await db.dataSource.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM rm_saga WHERE saga = $1 AND correlation_key = 't-1'`,
      [TALLY],
    );
    expect(n).toBe(1);
    const tally = await stateOf(TALLY, 't-1');
    expect(tally.state).toEqual({ opens: 2, count: 0 });
    expect(tally.history.map((entry) => entry.outcome)).toEqual(['started', 'continued']);
    // Both read "no instance"; the second's insert found the first's row, and it ran again on it.
    expect(runs.opens).toEqual([1, 1, 1]);
    expect(await broker.queueDepth(`${TALLY}.tally.opened.dlq`)).toBe(0);
  });

  it(`counts ${COUNTERS} concurrent messages for one instance to ${COUNTERS}: conflicts re-run the step at once`, async () => {
    const runs = app.get(Tally).runs;
    await app.publisher.publishNow(opened('t-2', 'a'));
    await waitFor('the tally opened', async () => (await instances.find(TALLY, 't-2'))?.version === 1);

    await Promise.all(
      Array.from({ length: COUNTERS }, (_, n) => app.publisher.publishNow(counted('t-2', n))),
    );
    await waitFor(
      () => `${COUNTERS} counts applied (ran ${runs.counts.length} times)`,
      async () => (await instances.find(TALLY, 't-2'))?.version === COUNTERS + 1,
      { timeoutMs: 30_000 },
    );

    const tally = await stateOf(TALLY, 't-2');
    expect(tally.state).toEqual({ opens: 1, count: COUNTERS });
    expect(tally.history).toHaveLength(COUNTERS + 1);
    expect(new Set(tally.history.map((entry) => entry.messageId)).size).toBe(COUNTERS + 1);
    // Steps ran side by side and lost races (more runs than messages), yet every run was attempt 1.
    expect(runs.counts.length).toBeGreaterThan(COUNTERS);
    expect(new Set(runs.counts)).toEqual(new Set([1]));
    expect(await broker.queueDepth(`${TALLY}.tally.counted.dlq`)).toBe(0);
    // Each lost race is counted: the runs beyond one per message.
    const conflicts = await app.get(MessagingMetrics).sagaConflicts.get();
    const sample = conflicts.values.find((value) => value.labels.queue === `${TALLY}.tally.counted`);
    expect(sample?.value).toBe(runs.counts.length - COUNTERS);
  });

  it('with maxConflictReruns 0, a lost race is an ordinary failure, retried as the next attempt, and no update is lost', async () => {
    const runs = app.get(StrictTally).runs;
    await app.publisher.publishNow(Object.assign(new StrictOpened(), opened('s-1', 'a')));
    await waitFor(
      'the strict tally opened',
      async () => (await instances.find(STRICT, 's-1'))?.version === 1,
    );

    await Promise.all([
      app.publisher.publishNow(Object.assign(new StrictCounted(), counted('s-1', 1))),
      app.publisher.publishNow(Object.assign(new StrictCounted(), counted('s-1', 2))),
    ]);
    await waitFor('both counts applied', async () => (await instances.find(STRICT, 's-1'))?.version === 3);

    expect((await stateOf(STRICT, 's-1')).state).toEqual({ opens: 1, count: 2 });
    expect([...runs.counts].sort()).toEqual([1, 1, 2]);
  });
});
