import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsInt, IsString } from 'class-validator';
import { MessageType, Saga, SagaInstances, SagaStep, type SagaContext } from 'nestjs-reliable-messaging';
import { MessagingMetrics } from 'nestjs-reliable-messaging/operations';
import { RELIABLE_MESSAGING_ENTITIES } from 'nestjs-reliable-messaging/typeorm';
import { DataSource } from 'typeorm';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'vote.opened', idempotencyKey: (m: PollOpened) => `opened:${m.pollId}` })
class PollOpened {
  @IsString() pollId!: string;
}

@MessageType({ type: 'vote.cast', idempotencyKey: (m: VoteCast) => `cast:${m.pollId}:${m.n}` })
class VoteCast {
  @IsString() pollId!: string;
  @IsInt() n!: number;
}

const POLL = uniqueQueue('poll');
const VOTES = 16;

/** Each vote holds its transaction open a little after reading the poll, so votes race for it. */
@Saga({ name: POLL, initialState: () => ({ votes: 0 }) })
class Poll {
  readonly attempts: number[] = [];

  @SagaStep(PollOpened, { correlate: (m) => m.pollId, onMissing: 'start', queueType: 'classic' })
  onOpened(): void {}

  @SagaStep(VoteCast, { correlate: (m) => m.pollId, queueType: 'classic', concurrency: 4 })
  async onVote(_vote: VoteCast, saga: SagaContext<{ votes: number }>): Promise<void> {
    this.attempts.push(saga.attempt);
    await saga.manager?.query('SELECT pg_sleep(0.005)');
    saga.state.votes += 1;
  }
}

describe('saga concurrency under REPEATABLE READ: a serialization failure is a lost race, re-run without an attempt', () => {
  let db: MessagingDatabase;
  let repeatableRead: DataSource;
  let broker: TestBroker;
  let app: MessagingTestApp;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    repeatableRead = new DataSource({
      type: 'postgres',
      url: db.database.url,
      entities: [...RELIABLE_MESSAGING_ENTITIES],
      isolationLevel: 'REPEATABLE READ',
      poolSize: 12,
      logging: false,
    });
    await repeatableRead.initialize();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, {
      providers: [Poll],
      options: { dataSource: repeatableRead, outbox: { relay: false } },
    });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    if (repeatableRead?.isInitialized) await repeatableRead.destroy();
    await db?.drop();
  });

  it(`counts ${VOTES} concurrent votes for one poll to ${VOTES}, every run attempt 1`, async () => {
    const instances = app.get(SagaInstances);
    const poll = app.get(Poll);
    await app.publisher.publishNow(Object.assign(new PollOpened(), { pollId: 'p-1' }));
    await waitFor('the poll opened', async () => (await instances.find(POLL, 'p-1'))?.version === 1);

    await Promise.all(
      Array.from({ length: VOTES }, (_, n) =>
        app.publisher.publishNow(Object.assign(new VoteCast(), { pollId: 'p-1', n })),
      ),
    );
    await waitFor(
      () => `${VOTES} votes applied (ran ${poll.attempts.length} times)`,
      async () => (await instances.find(POLL, 'p-1'))?.version === VOTES + 1,
      { timeoutMs: 30_000 },
    );

    expect((await instances.find(POLL, 'p-1'))?.state).toEqual({ votes: VOTES });
    expect(poll.attempts.length).toBeGreaterThan(VOTES);
    expect(new Set(poll.attempts)).toEqual(new Set([1]));
    expect(await broker.queueDepth(`${POLL}.vote.cast.dlq`)).toBe(0);
    // At least one lost race per extra run; a locked re-read can lose too (its snapshot predates the lock), before
    // the step runs at all.
    const conflicts = await app.get(MessagingMetrics).sagaConflicts.get();
    const lost = conflicts.values.find((value) => value.labels.queue === `${POLL}.vote.cast`)?.value;
    expect(lost).toBeGreaterThanOrEqual(poll.attempts.length - VOTES);
  });
});
