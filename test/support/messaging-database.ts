import { DataSource } from 'typeorm';
import {
  RELIABLE_MESSAGING_ENTITIES,
  RELIABLE_MESSAGING_MIGRATIONS,
} from 'nestjs-reliable-messaging/typeorm';
import { ADMIN_ENTITIES, ADMIN_MIGRATIONS } from 'nestjs-reliable-messaging-admin/typeorm';
import { createTestDatabase, type TestDatabase } from './test-database';
import { waitFor } from './wait-for';

/** A spec's own database with the messaging module's migrations applied, and a DataSource on it. */
export interface MessagingDatabase {
  readonly database: TestDatabase;
  readonly dataSource: DataSource;
  /**
   * Opens another DataSource on the same database (a second app replica, say); closed by `drop()`. `route`
   * rewrites its URL (through a TcpProxy, say). Default pool: 10 connections.
   */
  connect(poolSize?: number, route?: (url: string) => string): Promise<DataSource>;
  /** Destroys every DataSource opened here and drops the database. */
  drop(): Promise<void>;
}

/**
 * Creates a fresh database, applies RELIABLE_MESSAGING_MIGRATIONS through TypeORM (`migrationsRun`, as an app
 * does), and with `admin` the admin package's ADMIN_MIGRATIONS (its audit table) too, then runs `setupSql` (the
 * spec's own tables).
 */
export async function createMessagingDatabase(
  setupSql: readonly string[] = [],
  { admin = false }: { admin?: boolean } = {},
): Promise<MessagingDatabase> {
  const database = await createTestDatabase();
  const opened: DataSource[] = [];
  const connect = async (poolSize = 10, route = (url: string) => url): Promise<DataSource> => {
    const dataSource = new DataSource({
      type: 'postgres',
      url: route(database.url),
      entities: [...RELIABLE_MESSAGING_ENTITIES, ...(admin ? ADMIN_ENTITIES : [])],
      migrations: [...RELIABLE_MESSAGING_MIGRATIONS, ...(admin ? ADMIN_MIGRATIONS : [])],
      migrationsRun: true,
      poolSize,
      logging: false,
    });
    await dataSource.initialize();
    opened.push(dataSource);
    return dataSource;
  };
  const dataSource = await connect();
  for (const sql of setupSql) await dataSource.query(sql);
  return {
    database,
    dataSource,
    connect,
    async drop() {
      for (const source of opened) if (source.isInitialized) await source.destroy().catch(() => undefined);
      await database.drop();
    },
  };
}

/** A row of the outbox as the specs read it. */
export interface OutboxRowView {
  id: number;
  messageId: string;
  type: string;
  status: 'pending' | 'published' | 'parked';
  orderingKey: string | null;
  attempts: number;
  lastError: string | null;
  body: string;
}

/** Every outbox row, in id order. */
export async function outboxRows(dataSource: DataSource): Promise<OutboxRowView[]> {
  const rows = await dataSource.query<OutboxRowView[]>(
    `SELECT id::int AS id, message_id AS "messageId", properties->>'type' AS type, status, ordering_key AS "orderingKey", ` +
      `attempts, last_error AS "lastError", convert_from(body, 'UTF8') AS body FROM rm_outbox ORDER BY id`,
  );
  return rows;
}

/**
 * Waits until every outbox row that `matches` is published. A consumer can see a relayed message before the
 * broker's confirm reaches the relay, which marks the row after it: wait on this before asserting a status.
 */
export async function waitForOutboxPublished(
  dataSource: DataSource,
  matches: (row: OutboxRowView) => boolean = () => true,
): Promise<void> {
  await waitFor(
    'the outbox rows marked published',
    async () => (await outboxRows(dataSource)).filter(matches).every((row) => row.status === 'published'),
    { timeoutMs: 10_000, intervalMs: 20 },
  );
}
