import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsInt } from 'class-validator';
import { Consume, MessageType, type MessageContext } from 'nestjs-reliable-messaging';
import { OutboxMonitor, ConsumerConnection } from 'nestjs-reliable-messaging/operations';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { RabbitCluster, type ClusterNode } from '../apps/order-service/src/faults/rabbit-cluster';
import { TestBroker } from './support/test-broker';
import { sleep, waitFor } from './support/wait-for';

/**
 * A real 3-node cluster loses the node that leads the consumer's quorum queue to SIGKILL while the app publishes
 * and consumes through it. Starting the cluster takes from about 30 s on an idle machine to 2 minutes on a busy
 * one, so this spec runs on its own (`npm run test:cluster`), not in `npm test`.
 */
@MessageType({ type: 'ledger.entry-posted', idempotencyKey: (m: EntryPosted) => `entry:${m.n}` })
class EntryPosted {
  @IsInt() n!: number;
}

const QUEUE = uniqueQueue('cluster-ledger');
/** Every how many entries one goes through the outbox (committed, then relayed) instead of publishNow(). */
const OUTBOX_EVERY = 4;
/** Entries the stream publishes ahead of what is applied: enough to keep a backlog through the failover. */
const BACKLOG = 150;
const RESUME_LIMIT_MS = 10_000;

/** Applies each entry in the inbox transaction and remembers when deliveries started, for the failover gap. */
@Injectable()
class LedgerHandler {
  /** When each entry's first delivery started its handler. */
  readonly firstStarted = new Map<number, number>();
  /** Handler starts, in order: [entry, time]. */
  readonly starts: Array<[number, number]> = [];
  readonly applied = new Set<number>();

  @Consume({
    queue: QUEUE,
    queueType: 'quorum',
    concurrency: 10,
    retry: { initialDelayMs: 50, maxDelayMs: 500 },
  })
  async onEntryPosted(event: EntryPosted, ctx: MessageContext): Promise<void> {
    const now = Date.now();
    this.starts.push([event.n, now]);
    if (!this.firstStarted.has(event.n)) this.firstStarted.set(event.n, now);
    await ctx.manager!.query('INSERT INTO ledger (n) VALUES ($1)', [event.n]);
    this.applied.add(event.n);
  }
}

/**
 * Publishes entries 0, 1, 2... until `stop` aborts, `window` at a time, staying `BACKLOG` ahead of the consumer.
 * Every OUTBOX_EVERY-th entry is written to the outbox in a transaction (committed means the relay owes it);
 * the others are sent with publishNow(), retried after a failure until the broker confirms, as a caller would.
 * Resolves with the entries confirmed or committed.
 */
async function publishStream(
  app: MessagingTestApp,
  db: MessagingDatabase,
  ledger: LedgerHandler,
  window: number,
  stop: AbortSignal,
  errors: Map<string, number>,
): Promise<{ confirmed: Set<number>; committed: Set<number>; failedAttempts: number }> {
  const confirmed = new Set<number>();
  const committed = new Set<number>();
  let failedAttempts = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (!stop.aborted) {
      const n = next++;
      while (n - ledger.applied.size > BACKLOG && !stop.aborted) await sleep(5);
      const entry = Object.assign(new EntryPosted(), { n });
      for (;;) {
        try {
          if (n % OUTBOX_EVERY === 0) {
            await db.dataSource.transaction((manager) => app.publisher.publish(entry, { manager }));
            committed.add(n);
          } else {
            await app.publisher.publishNow(entry);
            confirmed.add(n);
          }
          break;
        } catch (error) {
          failedAttempts++;
          const text = `${(error as Error).name}: ${(error as Error).message.replace(/[0-9a-f-]{36}/g, '<id>')}`;
          errors.set(text, (errors.get(text) ?? 0) + 1);
          if (stop.aborted) return;
          await sleep(25);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
  return { confirmed, committed, failedAttempts };
}

describe('cluster failover: the node leading the quorum queue is killed', () => {
  let cluster: RabbitCluster;
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;
  let ledger: LedgerHandler;
  const stop = new AbortController();
  /** Why publishes failed, with how often: shown when the scenario fails. */
  const publishErrors = new Map<string, number>();

  beforeAll(async () => {
    cluster = await RabbitCluster.start();
    process.stdout.write(`cluster-failover: 3-node cluster started in ${cluster.startupMs} ms\n`);
    db = await createMessagingDatabase(['CREATE TABLE ledger (id serial PRIMARY KEY, n int NOT NULL)']);
    broker = await TestBroker.connect(cluster.nodes[2].url);
    app = await MessagingTestApp.start(broker, {
      providers: [LedgerHandler],
      options: {
        urls: cluster.nodes.map((node) => node.url),
        dataSource: db.dataSource,
        reconnect: { initialDelayMs: 100, maxDelayMs: 1_000 },
        outbox: { pollIntervalMs: 200, retryDelay: { initialMs: 100, maxMs: 1_000 } },
      },
    });
    ledger = app.get(LedgerHandler);
  }, 300_000);

  afterAll(async () => {
    stop.abort();
    await app?.close().catch(() => undefined);
    await broker?.close();
    await db?.drop();
    await cluster?.stop();
  }, 120_000);

  it('loses no confirmed entry, applies none twice and resumes consuming within 10 s', async () => {
    try {
      await failover();
    } catch (error) {
      // The app logs to memory: show what it said about the failover when the scenario fails.
      const said = app.logger.lines.filter((line) => line.level !== 'debug' && line.level !== 'verbose');
      process.stdout.write(
        `cluster-failover: the app's log:\n${said.map((l) => `${l.level} ${l.message}`).join('\n')}\n`,
      );
      const backlog = await app
        .get(OutboxMonitor)
        .backlog()
        .catch((failure: unknown) => String(failure));
      process.stdout.write(`cluster-failover: outbox ${JSON.stringify(backlog)}\n`);
      process.stdout.write(`cluster-failover: publish errors ${JSON.stringify([...publishErrors])}\n`);
      for (const node of cluster.nodes) {
        const queues = await cluster
          .ctl(
            node,
            'list_queues',
            'name',
            'leader',
            'messages_ready',
            'messages_unacknowledged',
            'consumers',
          )
          .catch((failure: unknown) => String(failure).split('\n')[0]);
        process.stdout.write(`cluster-failover: queues seen by ${node.name}:\n${queues}\n`);
      }
      throw error;
    }
  }, 300_000);

  async function failover(): Promise<void> {
    const publishing = publishStream(app, db, ledger, 10, stop.signal, publishErrors);

    await waitFor('300 entries applied before the fault', () => ledger.applied.size >= 300, {
      timeoutMs: 60_000,
    });
    const leader: ClusterNode = await cluster.leaderOf(QUEUE, cluster.nodes[0]);
    const connectedTo = app.logger.find('log', /^consumer connection: connected to /).at(-1)?.message;
    // 'disconnected' is emitted once the app saw its connection go; 'connected' once it is connected again with
    // its topology declared and its consumers subscribed.
    const connection = app.get(ConsumerConnection);
    let disconnectedAt: number | undefined;
    let reconnectedAt: number | undefined;
    connection.once('disconnected', () => (disconnectedAt = Date.now()));
    connection.once('connected', () => (reconnectedAt = Date.now()));
    await cluster.kill(leader);
    const killedAt = Date.now();
    const appliedAtKill = ledger.applied.size;

    const survivor = cluster.nodes.find((node) => node !== leader)!;
    await waitFor(
      () => `a new leader of ${QUEUE}`,
      async () => (await cluster.leaderOf(QUEUE, survivor)) !== leader,
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await waitFor(
      () => `300 more entries applied after the kill (applied ${ledger.applied.size - appliedAtKill})`,
      () => ledger.applied.size >= appliedAtKill + 300,
      { timeoutMs: 60_000 },
    );
    stop.abort();
    const { confirmed, committed, failedAttempts } = await publishing;

    const sent = [...confirmed, ...committed];
    await waitFor(
      () =>
        `every confirmed or committed entry applied (${sent.filter((n) => !ledger.applied.has(n)).length} left)`,
      () => sent.every((n) => ledger.applied.has(n)),
      { timeoutMs: 60_000 },
    );
    await waitFor('the outbox to drain', async () => (await app.get(OutboxMonitor).backlog()).pending === 0, {
      timeoutMs: 30_000,
    });

    const [{ rows, distinct }] = await db.dataSource.query<Array<{ rows: number; distinct: number }>>(
      'SELECT count(*)::int AS rows, count(DISTINCT n)::int AS distinct FROM ledger',
    );
    const lost = sent.filter((n) => !ledger.applied.has(n));

    // Deliveries already read from the dead node's socket can start just after the kill: consuming resumed with
    // the first entry never seen before whose delivery started after the app lost its connection (after the kill
    // when its connection was on a surviving node).
    const resumeFrom = disconnectedAt ?? killedAt;
    const lastStartBefore = Math.max(...ledger.starts.filter(([, at]) => at <= killedAt).map(([, at]) => at));
    const firstNewAfter = Math.min(...[...ledger.firstStarted.values()].filter((at) => at > resumeFrom));
    const figures = {
      leader: leader.name,
      appConnectedBeforeKill: connectedTo,
      confirmed: confirmed.size,
      committedToOutbox: committed.size,
      failedPublishAttempts: failedAttempts,
      rows,
      distinct,
      appliedTwice: rows - distinct,
      lost: lost.length,
      killToDisconnectedMs: disconnectedAt === undefined ? null : disconnectedAt - killedAt,
      killToResubscribedMs: reconnectedAt === undefined ? null : reconnectedAt - killedAt,
      killToFirstNewDeliveryMs: firstNewAfter - killedAt,
      lastDeliveryBeforeToFirstNewAfterMs: firstNewAfter - lastStartBefore,
      reconnects: app.logger.find('log', /^consumer connection: connected to /).map((line) => line.message),
    };
    process.stdout.write(`cluster-failover: ${JSON.stringify(figures)}\n`);

    expect(lost).toEqual([]);
    expect(rows - distinct).toBe(0);
    expect(distinct).toBe(ledger.applied.size);
    expect(firstNewAfter - killedAt).toBeLessThan(RESUME_LIMIT_MS);
    if (reconnectedAt !== undefined) expect(reconnectedAt - killedAt).toBeLessThan(RESUME_LIMIT_MS);
  }
});
