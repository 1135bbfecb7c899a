import { createMessagingDatabase, type MessagingDatabase } from './messaging-database';
import { TestBroker } from './test-broker';

/**
 * What an outbox spec starts from: its own database with the module's tables (and `tables`, its own), its own
 * broker names, the exchange the app publishes to, and an audit queue bound to it that records what the relay
 * published. The app itself is the spec's to start, on `exchange`.
 */
export interface OutboxSetup {
  readonly db: MessagingDatabase;
  readonly broker: TestBroker;
  readonly exchange: string;
  readonly audit: string;
  /** Deletes the spec's queues and exchanges and drops its database; close the app first. */
  close(): Promise<void>;
}

export async function outboxSetup(
  options: { tables?: readonly string[]; auditBinding?: string; admin?: boolean } = {},
): Promise<OutboxSetup> {
  const db = await createMessagingDatabase(options.tables, { admin: options.admin });
  const broker = await TestBroker.connect();
  const exchange = broker.name('events');
  const audit = broker.name('audit');
  const channel = await broker.openChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  await channel.assertQueue(audit, { durable: false });
  await channel.bindQueue(audit, exchange, options.auditBinding ?? '#');
  return {
    db,
    broker,
    exchange,
    audit,
    async close() {
      await broker.deleteByPrefix();
      await broker.close();
      await db.drop();
    },
  };
}
