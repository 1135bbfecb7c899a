import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfigurationError } from '../errors/configuration.error';
import { INBOX_TABLE, OUTBOX_TABLE, SCHEDULED_TABLE } from './table-names';

/**
 * Checks at startup that the configured DataSource can hold the outbox, the scheduled messages and the inbox: PostgreSQL (the relay relies
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
    const tables = [OUTBOX_TABLE, INBOX_TABLE, SCHEDULED_TABLE];
    const rows = await dataSource.query<Array<{ found: Array<string | null> }>>(
      `SELECT array[to_regclass($1)::text, to_regclass($2)::text, to_regclass($3)::text] AS found`,
      tables,
    );
    const missing = tables.filter((_, index) => !rows[0]?.found[index]);
    if (missing.length > 0) {
      throw new ConfigurationError(
        `ReliableMessagingModule: table(s) ${missing.join(', ')} missing from the database; add ` +
          'RELIABLE_MESSAGING_MIGRATIONS to the DataSource migrations with migrationsRun: true ' +
          '(and RELIABLE_MESSAGING_ENTITIES to its entities)',
      );
    }
  }
}
