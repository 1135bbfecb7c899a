import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import {
  Consume,
  ConfigurationError,
  MessagePublisher,
  MessageType,
  ScheduledMessages,
} from 'nestjs-reliable-messaging';
import type { DataSource } from 'typeorm';
import { waitForOutboxPublished, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp, uniqueQueue } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

@MessageType({
  type: 'shop.reminder',
  idempotencyKey: (m: Reminder) => `reminder:${m.id}`,
  orderingKey: (m: Reminder) => m.key,
})
class Reminder {
  @IsString() id!: string;
  @IsString() key!: string;
}

const reminder = (id: string, key = `key-${id}`): Reminder => Object.assign(new Reminder(), { id, key });

@MessageType({ type: 'shop.order-closed', idempotencyKey: (m: OrderClosed) => `order-closed:${m.id}` })
class OrderClosed {
  @IsString() id!: string;
}

/** Schedules a reminder from a deduplicating handler: in the handler's transaction, with its inbox row. */
@Injectable()
class ClosingHandler {
  constructor(private readonly publisher: MessagePublisher) {}

  @Consume({ queue: uniqueQueue('scheduling-handler'), queueType: 'classic' })
  async onOrderClosed(event: OrderClosed): Promise<void> {
    await this.publisher.publish(reminder(`after-${event.id}`), { delayMs: 300 });
  }
}

/**
 * Every message the audit queue got, by reminder id, with when this spec first saw each copy: the queue is
 * drained by every wait, so a copy is seen at most one poll after it arrived.
 */
class Audit {
  readonly seen = new Map<string, number[]>();
  readonly order: string[] = [];
  /** The AMQP timestamp (seconds) of each reminder's last copy. */
  readonly timestamps = new Map<string, number>();
  /** The `rm-scheduled-for` header of each reminder's last copy. */
  readonly scheduledFor = new Map<string, unknown>();

  constructor(
    private readonly broker: TestBroker,
    private readonly queue: string,
  ) {}

  async drain(): Promise<void> {
    for (const message of await this.broker.getAll(this.queue)) {
      const { id } = JSON.parse(message.content.toString()) as Reminder;
      this.seen.set(id, [...(this.seen.get(id) ?? []), Date.now()]);
      this.order.push(id);
      this.timestamps.set(id, message.properties.timestamp as number);
      this.scheduledFor.set(id, message.properties.headers?.['rm-scheduled-for']);
    }
  }

  copies(id: string): number {
    return this.seen.get(id)?.length ?? 0;
  }

  async waitFor(...ids: string[]): Promise<void> {
    await waitFor(
      () => `reminders ${ids.join(', ')} on the audit queue (saw ${this.order.join(', ')})`,
      async () => {
        await this.drain();
        return ids.every((id) => this.copies(id) > 0);
      },
      { timeoutMs: 15_000, intervalMs: 20 },
    );
  }
}

/** The rows of both tables holding the reminder `id`. */
async function rowsOf(dataSource: DataSource, id: string): Promise<{ scheduled: number; outbox: number }> {
  const [row] = await dataSource.query<Array<{ scheduled: number; outbox: number }>>(
    `SELECT (SELECT count(*) FROM rm_scheduled WHERE convert_from(body, 'UTF8') LIKE $1)::int AS scheduled, ` +
      `(SELECT count(*) FROM rm_outbox WHERE convert_from(body, 'UTF8') LIKE $1)::int AS outbox`,
    [`%"id":"${id}"%`],
  );
  return row;
}

/** When the reminder's outbox row was written: when it was promoted. */
async function enteredOutboxAt(dataSource: DataSource, id: string): Promise<Date> {
  const [row] = await dataSource.query<Array<{ created_at: Date }>>(
    `SELECT created_at FROM rm_outbox WHERE convert_from(body, 'UTF8') LIKE $1`,
    [`%"id":"${id}"%`],
  );
  return row.created_at;
}

/** Resolves once the clock has passed `at`: the condition a spec about a due time waits on. */
function timePassed(at: number): Promise<void> {
  return waitFor(`the clock past ${new Date(at).toISOString()}`, () => Date.now() > at, {
    timeoutMs: Math.max(1000, at - Date.now() + 1000),
    intervalMs: 20,
  });
}

/**
 * The relay's and the promoter's fallback poll is a minute in these apps, so every scheduled message seen here was
 * promoted because the promoter slept until it was due, or was told of it by a commit (its own process) or a
 * NOTIFY (another's).
 */
const QUIET_POLL = { pollIntervalMs: 60_000 };

describe('scheduled messages: published with deliverAt or delayMs, sent when due, cancellable until then', () => {
  let setup: OutboxSetup;
  let db: MessagingDatabase;
  let app: MessagingTestApp;
  let publisher: MessagePublisher;
  let scheduled: ScheduledMessages;
  let audit: Audit;

  beforeAll(async () => {
    setup = await outboxSetup();
    db = setup.db;
    audit = new Audit(setup.broker, setup.audit);
    app = await MessagingTestApp.start(setup.broker, {
      providers: [ClosingHandler],
      options: {
        exchange: setup.exchange,
        dataSource: db.dataSource,
        outbox: QUIET_POLL,
        metricsRegistry: new Registry(),
      },
    });
    publisher = app.publisher;
    scheduled = app.get(ScheduledMessages);
  });

  afterAll(async () => {
    await app?.close();
    await setup?.close();
  });

  it('keeps a message scheduled in a committed transaction out of the outbox until it is due, then sends it once; a rolled-back one never', async () => {
    const deliverAt = new Date(Date.now() + 1500);
    const receipt = await db.dataSource.transaction((manager) =>
      publisher.publish(reminder('due-later'), { manager, deliverAt }),
    );
    await expect(
      db.dataSource.transaction(async (manager) => {
        await publisher.publish(reminder('rolled-back'), { manager, deliverAt });
        throw new Error('the business rule fails after the publish');
      }),
    ).rejects.toThrow('the business rule fails after the publish');

    expect(await rowsOf(db.dataSource, 'due-later')).toEqual({ scheduled: 1, outbox: 0 });
    expect(await rowsOf(db.dataSource, 'rolled-back')).toEqual({ scheduled: 0, outbox: 0 });
    const [stored] = await db.dataSource.query<Array<{ message_id: string; idempotency_key: string }>>(
      `SELECT message_id, idempotency_key FROM rm_scheduled`,
    );
    expect(stored).toEqual({ message_id: receipt.messageId, idempotency_key: 'reminder:due-later' });

    await audit.waitFor('due-later');
    await waitForOutboxPublished(db.dataSource);

    expect(audit.seen.get('due-later')![0]).toBeGreaterThanOrEqual(deliverAt.getTime());
    // Stamped when sent, so the queue-age metric does not count the wait as lateness.
    expect(audit.timestamps.get('due-later')).toBeGreaterThanOrEqual(Math.floor(deliverAt.getTime() / 1000));
    // Consumer lag counts from it.
    expect(Date.parse(audit.scheduledFor.get('due-later') as string)).toBe(deliverAt.getTime());
    expect((await enteredOutboxAt(db.dataSource, 'due-later')).getTime()).toBeGreaterThanOrEqual(
      deliverAt.getTime(),
    );
    expect(await rowsOf(db.dataSource, 'due-later')).toEqual({ scheduled: 0, outbox: 1 });
    await timePassed(Date.now() + 300);
    await audit.drain();
    expect(audit.copies('due-later')).toBe(1);
    expect(audit.copies('rolled-back')).toBe(0);
  });

  it('cancels by message id and by idempotency key before the message is due, and cancels nothing once it was sent', async () => {
    const deliverAt = new Date(Date.now() + 800);
    const byId = await db.dataSource.transaction((manager) =>
      publisher.publish(reminder('cancel-by-id'), { manager, deliverAt }),
    );
    await db.dataSource.transaction(async (manager) => {
      await publisher.publish(reminder('cancel-by-key'), { manager, deliverAt });
      // Same class, same id: the same idempotency key, so one cancel takes both.
      await publisher.publish(reminder('cancel-by-key'), { manager, delayMs: 600 });
    });
    // Due after the cancelled ones: once it is sent, they would have been sent before it.
    const control = await db.dataSource.transaction((manager) =>
      publisher.publish(reminder('control'), { manager, deliverAt: new Date(deliverAt.getTime() + 200) }),
    );

    expect(await scheduled.cancel({ messageId: byId.messageId })).toBe(1);
    expect(await scheduled.cancel({ idempotencyKey: 'reminder:cancel-by-key' })).toBe(2);
    expect(await scheduled.cancel({ messageId: byId.messageId })).toBe(0);

    await audit.waitFor('control');
    await waitForOutboxPublished(db.dataSource);
    expect(audit.copies('cancel-by-id')).toBe(0);
    expect(audit.copies('cancel-by-key')).toBe(0);
    expect(await rowsOf(db.dataSource, 'cancel-by-id')).toEqual({ scheduled: 0, outbox: 0 });
    expect(await rowsOf(db.dataSource, 'cancel-by-key')).toEqual({ scheduled: 0, outbox: 0 });
    expect(await scheduled.cancel({ messageId: control.messageId })).toBe(0);
    expect(await scheduled.cancel({ idempotencyKey: 'reminder:control' })).toBe(0);
    expect(audit.copies('control')).toBe(1);
  });

  it("cancels in the caller's transaction: a cancel that rolls back leaves the message to be sent", async () => {
    const receipt = await db.dataSource.transaction((manager) =>
      publisher.publish(reminder('cancel-rolled-back'), { manager, delayMs: 500 }),
    );
    await expect(
      db.dataSource.transaction(async (manager) => {
        expect(await scheduled.cancel({ messageId: receipt.messageId }, { manager })).toBe(1);
        throw new Error('the cancelling transaction fails');
      }),
    ).rejects.toThrow('the cancelling transaction fails');

    await audit.waitFor('cancel-rolled-back');
    expect(audit.copies('cancel-rolled-back')).toBe(1);
  });

  it("takes its place in its ordering key's order when it is due, behind the key's messages published meanwhile", async () => {
    await db.dataSource.transaction((manager) =>
      publisher.publish(reminder('keyed-scheduled', 'customer-7'), { manager, delayMs: 700 }),
    );
    await db.dataSource.transaction((manager) =>
      publisher.publish(reminder('keyed-now', 'customer-7'), { manager }),
    );

    await audit.waitFor('keyed-now', 'keyed-scheduled');
    const order = audit.order.filter((id) => id.startsWith('keyed-'));
    expect(order).toEqual(['keyed-now', 'keyed-scheduled']);
  });

  it("schedules from a deduplicating handler in the handler's transaction", async () => {
    await publisher.publishNow(Object.assign(new OrderClosed(), { id: 'closed-1' }));

    await audit.waitFor('after-closed-1');
    expect(audit.copies('after-closed-1')).toBe(1);
  });

  it('keeps the order of the messages of one publishAll() without an ordering key', async () => {
    const batch = ['batch-1', 'batch-2', 'batch-3'].map((id) => ({
      type: 'shop.reminder',
      payload: { id, key: 'none' },
      idempotencyKey: `reminder:${id}`,
    }));
    await db.dataSource.transaction((manager) => publisher.publishAll(batch, { manager, delayMs: 300 }));
    const keys = await db.dataSource.query<Array<{ ordering_key: string }>>(
      `SELECT ordering_key FROM rm_scheduled WHERE idempotency_key LIKE 'reminder:batch-%' ORDER BY id`,
    );
    expect(new Set(keys.map((row) => row.ordering_key)).size).toBe(1);
    expect(keys[0].ordering_key).toMatch(/^rm-transaction:/);

    await audit.waitFor('batch-1', 'batch-2', 'batch-3');
    expect(audit.order.filter((id) => id.startsWith('batch-'))).toEqual(['batch-1', 'batch-2', 'batch-3']);
  });

  it('writes a message due now (delayMs 0, or a deliverAt not in the future) straight to the outbox', async () => {
    await db.dataSource.transaction(async (manager) => {
      await publisher.publish(reminder('delay-zero'), { manager, delayMs: 0 });
      await publisher.publish(reminder('past'), { manager, deliverAt: new Date(Date.now() - 60_000) });
      expect(await rowsOf(manager.connection, 'delay-zero')).toEqual({ scheduled: 0, outbox: 0 });
      const [row] = await manager.query<Array<{ scheduled: number; outbox: number }>>(
        `SELECT (SELECT count(*) FROM rm_scheduled)::int AS scheduled, ` +
          `(SELECT count(*) FROM rm_outbox WHERE convert_from(body, 'UTF8') ~ '"id":"(delay-zero|past)"')::int AS outbox`,
      );
      expect(row).toEqual({ scheduled: 0, outbox: 2 });
    });
    await audit.waitFor('delay-zero', 'past');
  });

  it('refuses a schedule on calls that send at once, and invalid schedules, before writing anything', async () => {
    await expect(publisher.publishNow(reminder('now'), { delayMs: 10 })).rejects.toThrow(
      /publishNow\(\) of 'Reminder' sends at once, so it takes no deliverAt or delayMs/,
    );
    await expect(
      db.dataSource.transaction((manager) =>
        publisher.publish(reminder('both'), { manager, delayMs: 10, deliverAt: new Date(Date.now() + 10) }),
      ),
    ).rejects.toThrow(ConfigurationError);
    await expect(
      db.dataSource.transaction((manager) =>
        publisher.publish(reminder('nan'), { manager, delayMs: Number.NaN }),
      ),
    ).rejects.toThrow(/delayMs must be a finite number/);
    await expect(scheduled.cancel({ messageId: 'not-a-uuid' })).rejects.toThrow(/messageId must be a UUID/);
    expect(await rowsOf(db.dataSource, 'both')).toEqual({ scheduled: 0, outbox: 0 });
  });
});

describe('scheduled messages: durable across a restart of the app', () => {
  let setup: OutboxSetup;

  beforeAll(async () => {
    setup = await outboxSetup();
  });

  afterAll(async () => {
    await setup?.close();
  });

  it('sends a message that fell due while no app ran once the next one starts, once', async () => {
    const { db } = setup;
    const audit = new Audit(setup.broker, setup.audit);
    const options = { exchange: setup.exchange, dataSource: db.dataSource, outbox: QUIET_POLL };
    const first = await MessagingTestApp.start(setup.broker, { options });
    const deliverAt = new Date(Date.now() + 1500);
    await db.dataSource.transaction((manager) =>
      first.publisher.publish(reminder('across-restart'), { manager, deliverAt }),
    );
    await first.close();

    await timePassed(deliverAt.getTime() + 200);
    expect(await rowsOf(db.dataSource, 'across-restart')).toEqual({ scheduled: 1, outbox: 0 });
    await audit.drain();
    expect(audit.copies('across-restart')).toBe(0);

    const second = await MessagingTestApp.start(setup.broker, { options });
    try {
      await audit.waitFor('across-restart');
      await waitForOutboxPublished(db.dataSource);
      await audit.drain();
      expect(audit.copies('across-restart')).toBe(1);
      expect(await rowsOf(db.dataSource, 'across-restart')).toEqual({ scheduled: 0, outbox: 1 });
    } finally {
      await second.close();
    }
  });
});

describe('scheduled messages: several processes on one database', () => {
  let setup: OutboxSetup;
  const apps: MessagingTestApp[] = [];

  beforeAll(async () => {
    setup = await outboxSetup();
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    await setup?.close();
  });

  const start = async (dataSource: DataSource, relay: boolean): Promise<MessagingTestApp> => {
    const app = await MessagingTestApp.start(setup.broker, {
      options: {
        exchange: setup.exchange,
        dataSource,
        outbox: { ...QUIET_POLL, relay },
        metricsRegistry: new Registry(),
      },
    });
    apps.push(app);
    return app;
  };

  it('sends each due message exactly once with two relaying apps, and a process that does not relay wakes them by NOTIFY', async () => {
    const { db } = setup;
    const audit = new Audit(setup.broker, setup.audit);
    await start(db.dataSource, true);
    await start(await db.connect(), true);
    const writerSource = await db.connect();
    const writer = await start(writerSource, false);

    const base = Date.now() + 1000;
    const ids = Array.from({ length: 60 }, (_, n) => `many-${n}`);
    for (const [n, id] of ids.entries()) {
      // Due in three waves, 20 at the same moment each.
      const deliverAt = new Date(base + Math.floor(n / 20) * 150);
      await writerSource.transaction((manager) =>
        writer.publisher.publish(reminder(id), { manager, deliverAt }),
      );
    }

    await audit.waitFor(...ids);
    await waitForOutboxPublished(db.dataSource);
    await timePassed(Date.now() + 300);
    await audit.drain();

    expect(ids.filter((id) => audit.copies(id) !== 1)).toEqual([]);
    const [counts] = await db.dataSource.query<
      Array<{ scheduled: number; outbox: number; distinct: number }>
    >(
      `SELECT (SELECT count(*) FROM rm_scheduled)::int AS scheduled, count(*)::int AS outbox, ` +
        `count(DISTINCT message_id)::int AS distinct FROM rm_outbox`,
    );
    expect(counts).toEqual({ scheduled: 0, outbox: 60, distinct: 60 });
  });
});

describe('scheduled messages: backlog, metrics and the path without an outbox', () => {
  let setup: OutboxSetup;
  const registry = new Registry();
  let app: MessagingTestApp;

  beforeAll(async () => {
    setup = await outboxSetup();
    // No relay here, so nothing promotes: the due message stays overdue.
    app = await MessagingTestApp.start(setup.broker, {
      options: {
        exchange: setup.exchange,
        dataSource: setup.db.dataSource,
        outbox: { relay: false },
        metricsRegistry: registry,
      },
    });
  });

  afterAll(async () => {
    await app?.close();
    await setup?.close();
  });

  it('counts the waiting messages, tells how late the most overdue one is, and lists them first due first', async () => {
    const { db } = setup;
    const scheduled = app.get(ScheduledMessages);
    const soon = new Date(Date.now() + 200);
    await db.dataSource.transaction(async (manager) => {
      await app.publisher.publish(reminder('far'), { manager, delayMs: 3_600_000 });
      await app.publisher.publish(reminder('soon'), { manager, deliverAt: soon });
    });
    expect(await scheduled.backlog()).toEqual({ scheduled: 2, exact: true, oldestOverdueSeconds: 0 });

    await timePassed(soon.getTime() + 300);
    const backlog = await scheduled.backlog();
    expect(backlog).toMatchObject({ scheduled: 2, exact: true });
    expect(backlog.oldestOverdueSeconds).toBeGreaterThan(0.2);

    const gauge = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;
    expect(await gauge('rm_scheduled_messages')).toBe(2);
    expect(await gauge('rm_scheduled_oldest_overdue_seconds')).toBeGreaterThan(0.2);

    const listed = await scheduled.list(10);
    expect(listed.map((row) => [row.type, row.idempotencyKey])).toEqual([
      ['shop.reminder', 'reminder:soon'],
      ['shop.reminder', 'reminder:far'],
    ]);
    expect(listed[0].deliverAt.getTime()).toBe(soon.getTime());
  });

  it('refuses a scheduled publish in an app without a dataSource, naming the option it needs', async () => {
    const plain = await MessagingTestApp.start(setup.broker, {
      options: { exchange: setup.exchange, metricsRegistry: new Registry() },
    });
    try {
      await expect(plain.publisher.publish(reminder('no-outbox'), { delayMs: 1000 })).rejects.toThrow(
        /wait in the outbox's database \(the module's dataSource option\), or without one in the broker's delay levels \(scheduling: \{ brokerDelays: true \}\)/,
      );
      await expect(plain.get(ScheduledMessages).cancel({ idempotencyKey: 'k' })).rejects.toThrow(
        /set the dataSource option/,
      );
    } finally {
      await plain.close();
    }
  });
});
