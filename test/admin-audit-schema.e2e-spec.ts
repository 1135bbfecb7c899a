import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ADMIN_MIGRATIONS } from 'nestjs-reliable-messaging-admin/typeorm';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';

describe('the admin package’s audit table', () => {
  let db: MessagingDatabase;

  beforeAll(async () => {
    db = await createMessagingDatabase([], { admin: true });
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('is migrated by ADMIN_MIGRATIONS to exactly what DeadLetterAuditEntity describes', async () => {
    const pending = await db.dataSource.driver.createSchemaBuilder().log();

    expect(
      pending.upQueries.map((query) => query.query).filter((sql) => /rm_dead_letter_audit/.test(sql)),
    ).toEqual([]);
    expect(await db.dataSource.query(`SELECT to_regclass('rm_dead_letter_audit') AS a`)).toEqual([
      { a: 'rm_dead_letter_audit' },
    ]);
  });

  it('reverts its migrations, leaving the core’s tables', async () => {
    const other = await createMessagingDatabase([], { admin: true });
    const runner = other.dataSource.createQueryRunner();
    try {
      // NOTE: undoLastMigration() undoes by timestamp across both packages' migrations, which interleave.
      for (const Migration of [...ADMIN_MIGRATIONS].reverse()) await new Migration().down(runner);
      expect(
        await other.dataSource.query(
          `SELECT to_regclass('rm_dead_letter_audit') AS a, to_regclass('rm_outbox') AS o`,
        ),
      ).toEqual([{ a: null, o: 'rm_outbox' }]);
    } finally {
      await runner.release();
      await other.drop();
    }
  });
});
