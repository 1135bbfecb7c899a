import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsInt, IsString } from 'class-validator';
import { MessageType, Saga, SagaInstances, SagaStep, type SagaContext } from 'nestjs-reliable-messaging';
import { MessagingMetrics } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/** Carries its instance's key as its ordering key, so a key-ordered step gets an instance's messages in one partition. */
@MessageType({
  type: 'keyed-tally.counted',
  idempotencyKey: (m: KeyedCounted) => `counted:${m.tallyId}:${m.n}`,
  orderingKey: (m: KeyedCounted) => m.tallyId,
})
class KeyedCounted {
  @IsString() tallyId!: string;
  @IsInt() n!: number;
}

const counted = (tallyId: string, n: number): KeyedCounted =>
  Object.assign(new KeyedCounted(), { tallyId, n });

interface TallyState {
  count: number;
}

const TALLY = uniqueQueue('keyed-tally');
const PARTITIONS = 4;
const INSTANCES = ['k-1', 'k-2', 'k-3'];
const PER_INSTANCE = 30;

@Saga({ name: TALLY, initialState: (): TallyState => ({ count: 0 }) })
class KeyedTally {
  /** Every run of the step, re-runs included, by instance. */
  readonly runs = new Map<string, number>();
  /** Runs of one instance under way at this moment, and the most seen at once. */
  private readonly running = new Map<string, number>();
  mostAtOnce = 0;

  @SagaStep(KeyedCounted, {
    correlate: (m) => m.tallyId,
    onMissing: 'start',
    ordering: { by: 'key', partitions: PARTITIONS },
  })
  async onCounted(event: KeyedCounted, saga: SagaContext<TallyState>): Promise<void> {
    this.runs.set(event.tallyId, (this.runs.get(event.tallyId) ?? 0) + 1);
    const now = (this.running.get(event.tallyId) ?? 0) + 1;
    this.running.set(event.tallyId, now);
    this.mostAtOnce = Math.max(this.mostAtOnce, now);
    try {
      // Held open after the read, so that two runs of one instance side by side would read the same version.
      await saga.manager?.query('SELECT pg_sleep(0.005)');
      saga.state.count += 1;
    } finally {
      this.running.set(event.tallyId, now - 1);
    }
  }
}

/**
 * A saga step consumed with `ordering: { by: 'key' }`, its message's ordering key the instance's correlation key:
 * an instance's messages, published all at once, are handled one at a time in one partition, so no step loses
 * the race for its instance (no conflict, no re-run) and every update is kept, while instances in different
 * partitions go on side by side.
 */
describe('saga steps ordered by key: concurrent messages for one instance never race', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let instances: SagaInstances;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [KeyedTally],
      options: { dataSource: await db.connect(PARTITIONS + 4), outbox: { relay: false } },
    });
    instances = app.get(SagaInstances);
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it(`counts ${PER_INSTANCE} messages published at once for each of ${INSTANCES.length} instances: no conflict, no re-run, no update lost`, async () => {
    const tally = app.get(KeyedTally);
    await Promise.all(
      INSTANCES.flatMap((key) =>
        Array.from({ length: PER_INSTANCE }, (_, n) => app.publisher.publishNow(counted(key, n))),
      ),
    );
    let applied = 0;
    await waitFor(
      () => `${INSTANCES.length * PER_INSTANCE} steps applied (${applied} so far)`,
      async () => {
        const found = await Promise.all(INSTANCES.map((key) => instances.find(TALLY, key)));
        applied = found.reduce((sum, instance) => sum + (instance?.version ?? 0), 0);
        return applied === INSTANCES.length * PER_INSTANCE;
      },
      { timeoutMs: 30_000 },
    );

    for (const key of INSTANCES) {
      const instance = (await instances.find(TALLY, key, { historyLimit: 1000 }))!;
      expect({ key, state: instance.state, version: instance.version }).toEqual({
        key,
        state: { count: PER_INSTANCE },
        version: PER_INSTANCE,
      });
      expect(new Set(instance.history.map((entry) => entry.messageId)).size).toBe(PER_INSTANCE);
      // One run per message: the instance's steps never ran side by side, so none ran again.
      expect(tally.runs.get(key)).toBe(PER_INSTANCE);
    }
    expect(tally.mostAtOnce).toBe(1);
    const conflicts = await app.get(MessagingMetrics).sagaConflicts.get();
    expect(conflicts.values.filter((value) => String(value.labels.queue).startsWith(TALLY))).toEqual([]);
    for (let p = 0; p < PARTITIONS; p++)
      expect(await broker.queueDepth(`${TALLY}.keyed-tally.counted.p00${p}.dlq`)).toBe(0);
  });
});
