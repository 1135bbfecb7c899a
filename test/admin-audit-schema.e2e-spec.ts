import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ADMIN_MIGRATIONS } from 'nestjs-reliable-messaging-admin/typeorm';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';

describe('the admin package’s tables: the audit trail and the signed-out console sessions', () => {
  let db: MessagingDatabase;

  beforeAll(async () => {
    db = await createMessagingDatabase([], { admin: true });
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('is migrated by ADMIN_MIGRATIONS to exactly what DeadLetterAuditEntity and AdminSessionRevocationEntity describe', async () => {
    const pending = await db.dataSource.driver.createSchemaBuilder().log();

    expect(
      pending.upQueries
        .map((query) => query.query)
        .filter((sql) => /rm_dead_letter_audit|rm_admin_session_revocation/.test(sql)),
    ).toEqual([]);
    expect(
      await db.dataSource.query(
        `SELECT to_regclass('rm_dead_letter_audit') AS a, to_regclass('rm_admin_session_revocation') AS s`,
      ),
    ).toEqual([{ a: 'rm_dead_letter_audit', s: 'rm_admin_session_revocation' }]);
  });

  it('reverts its migrations, leaving the core’s tables', async () => {
    const other = await createMessagingDatabase([], { admin: true });
    const runner = other.dataSource.createQueryRunner();
    try {
      // NOTE: undoLastMigration() undoes by timestamp across both packages' migrations, which interleave.
      for (const Migration of [...ADMIN_MIGRATIONS].reverse()) await new Migration().down(runner);
      expect(
        await other.dataSource.query(
          `SELECT to_regclass('rm_dead_letter_audit') AS a, to_regclass('rm_admin_session_revocation') AS s, ` +
            `to_regclass('rm_outbox') AS o`,
        ),
      ).toEqual([{ a: null, s: null, o: 'rm_outbox' }]);
    } finally {
      await runner.release();
      await other.drop();
    }
  });
});
