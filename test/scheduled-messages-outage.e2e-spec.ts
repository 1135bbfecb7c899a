import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsString } from 'class-validator';
import { Registry } from 'prom-client';
import { MessageType } from 'nestjs-reliable-messaging';
import type { DataSource } from 'typeorm';
import { waitForOutboxPublished } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { outboxSetup, type OutboxSetup } from './support/outbox-setup';
import { TcpProxy } from './support/tcp-proxy';
import { waitFor } from './support/wait-for';

@MessageType({ type: 'shop.reminder', idempotencyKey: (m: Reminder) => `reminder:${m.id}` })
class Reminder {
  @IsString() id!: string;
}

async function tables(dataSource: DataSource): Promise<{ scheduled: number; outbox: number }> {
  const [row] = await dataSource.query<Array<{ scheduled: number; outbox: number }>>(
    `SELECT (SELECT count(*) FROM rm_scheduled)::int AS scheduled, (SELECT count(*) FROM rm_outbox)::int AS outbox`,
  );
  return row;
}

/**
 * The database goes away for the app (a TCP proxy cuts its connections and refuses new ones) from before a
 * scheduled message is due until after: the promoter fails, backs off and goes on; once the database is back the
 * message enters the outbox once and is sent once.
 */
describe('scheduled messages: a database outage around the due time', () => {
  let setup: OutboxSetup;
  let proxy: TcpProxy;
  let app: MessagingTestApp;
  /** The app's DataSource, through the proxy. */
  let dataSource: DataSource;

  beforeAll(async () => {
    setup = await outboxSetup();
    proxy = await TcpProxy.start(setup.db.database.url);
    dataSource = await setup.db.connect(10, () => proxy.url);
    app = await MessagingTestApp.start(setup.broker, {
      options: {
        exchange: setup.exchange,
        dataSource,
        outbox: { pollIntervalMs: 60_000 },
        metricsRegistry: new Registry(),
      },
    });
  });

  afterAll(async () => {
    proxy?.restore();
    await app?.close();
    await proxy?.close();
    await setup?.close();
  });

  it('promotes the message once the database is back, exactly once, and the promoter keeps running', async () => {
    const { db, broker, audit } = setup;
    const deliverAt = new Date(Date.now() + 800);
    await dataSource.transaction((manager) =>
      app.publisher.publish(Object.assign(new Reminder(), { id: 'through-outage' }), { manager, deliverAt }),
    );

    proxy.cut();
    await waitFor(
      'the promoter to fail against the missing database',
      () => app.logger.find('warn', /scheduled messages: promoting the due ones failed/).length > 0,
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    await waitFor('the due time passed', () => Date.now() > deliverAt.getTime() + 500, { intervalMs: 20 });
    expect(await tables(db.dataSource)).toEqual({ scheduled: 1, outbox: 0 });
    proxy.restore();

    const received = await broker.waitForMessages(audit, 1, 20_000);
    await waitForOutboxPublished(db.dataSource);
    expect(received.map((message) => JSON.parse(message.content.toString()) as Reminder)).toEqual([
      { id: 'through-outage' },
    ]);
    expect(await tables(db.dataSource)).toEqual({ scheduled: 0, outbox: 1 });
    expect(await broker.getAll(audit)).toEqual([]);
  });
});
