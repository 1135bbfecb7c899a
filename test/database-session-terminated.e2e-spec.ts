import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';
import { MessagingTestApp } from './support/messaging-app';
import { TestBroker } from './support/test-broker';
import { waitFor } from './support/wait-for';

/**
 * A session the server ends while the app holds it between two queries (a transaction waiting on the handler's
 * own work, say) must not end the process. pg-pool takes its error listener off a checked-out client and
 * TypeORM adds none, so without the module's guard the client's `error` event has no listener and Node throws
 * it: the fault matrix saw the order service crash that way under `pg_terminate_backend`.
 */
describe('a database session terminated while the app holds it', () => {
  let db: MessagingDatabase;
  let broker: TestBroker;
  let app: MessagingTestApp;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    broker = await TestBroker.connect();
    app = await MessagingTestApp.start(broker, { options: { dataSource: db.dataSource } });
  });

  afterAll(async () => {
    await app?.close();
    await broker?.deleteByPrefix();
    await broker?.close();
    await db?.drop();
  });

  it('is logged, and only the query runner that held it fails', async () => {
    const held = db.dataSource.createQueryRunner();
    await held.connect();
    await held.startTransaction();
    const [{ pid }] = (await held.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;

    await db.dataSource.query('SELECT pg_terminate_backend($1)', [pid]);
    await waitFor(
      'the closed session logged',
      () => app.logger.find('warn', /a database session in use was closed/).length > 0,
    );

    await expect(held.query('SELECT 1')).rejects.toThrow();
    await held.release().catch(() => undefined);
    expect(await db.dataSource.query('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });
});
