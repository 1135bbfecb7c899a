import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfigurationError } from '../errors/configuration.error';
import { INBOX_TABLE, OUTBOX_TABLE } from './table-names';

/**
 * Checks at startup that the configured DataSource can hold the outbox and inbox: PostgreSQL (the relay relies
 * on `FOR UPDATE SKIP LOCKED` and LISTEN/NOTIFY), initialized, with the module's migrations applied. Each
 * failure stops startup with a message that says what to change.
 */
@Injectable()
export class SchemaCheck implements OnModuleInit {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  async onModuleInit(): Promise<void> {
    const dataSource = this.options.dataSource;
    if (!dataSource) return;
    if (dataSource.options.type !== 'postgres') {
      throw new ConfigurationError(
        `ReliableMessagingModule: the outbox and inbox need a PostgreSQL DataSource, got type '${dataSource.options.type}'`,
      );
    }
    if (!dataSource.isInitialized) {
      throw new ConfigurationError(
        "ReliableMessagingModule: the dataSource option is not initialized; inject TypeOrmModule's DataSource " +
          'through forRootAsync({ inject: [DataSource] }), or await dataSource.initialize() first',
      );
    }
    const rows = await dataSource.query<Array<{ outbox: string | null; inbox: string | null }>>(
      `SELECT to_regclass($1) AS outbox, to_regclass($2) AS inbox`,
      [OUTBOX_TABLE, INBOX_TABLE],
    );
    const missing = [
      rows[0]?.outbox ? undefined : OUTBOX_TABLE,
      rows[0]?.inbox ? undefined : INBOX_TABLE,
    ].filter((table) => table !== undefined);
    if (missing.length > 0) {
      throw new ConfigurationError(
        `ReliableMessagingModule: table(s) ${missing.join(', ')} missing from the database; add ` +
          'RELIABLE_MESSAGING_MIGRATIONS to the DataSource migrations with migrationsRun: true ' +
          '(and RELIABLE_MESSAGING_ENTITIES to its entities)',
      );
    }
  }
}
