import { Logger as NestLogger } from '@nestjs/common';
import type { Logger as TypeOrmLogger } from 'typeorm';

/** The longest part of a failed or slow query's SQL that is logged. */
const MAX_SQL_LENGTH = 200;

/**
 * TypeORM's log through the app's logger, so it follows LOG_FORMAT like every other line (TypeORM's own
 * loggers write to the console directly). A failed query is logged by its error's class and code and the start
 * of its SQL, never its parameters, which hold customer data; successful queries are not logged.
 */
export class DatabaseLogger implements TypeOrmLogger {
  private readonly logger = new NestLogger('Database');

  logQuery(): void {}

  logQueryError(error: string | Error, query: string): void {
    const code = typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
    const name = typeof error === 'object' ? error.constructor.name : 'Error';
    this.logger.warn(`query failed (${name}${typeof code === 'string' ? ` ${code}` : ''}): ${sqlOf(query)}`);
  }

  logQuerySlow(time: number, query: string): void {
    this.logger.warn(`slow query (${time} ms): ${sqlOf(query)}`);
  }

  logSchemaBuild(message: string): void {
    this.logger.log(message);
  }

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    const text = typeof message === 'string' ? message : String(message);
    if (level === 'warn') this.logger.warn(text);
    else this.logger.log(text);
  }
}

function sqlOf(query: string): string {
  const oneLine = query.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_SQL_LENGTH ? `${oneLine.slice(0, MAX_SQL_LENGTH)}...` : oneLine;
}
