/**
 * The operator's tools for dead letters and parked outbox rows, imported as `nestjs-reliable-messaging/dead-letters`:
 * the `dlq` command line, the opt-in HTTP admin module, and the operations both run on (dead letters: list, show,
 * replay, edit, purge; parked outbox rows: list, show, retry, discard) with the audit trail they write.
 * Dead-lettering and the outbox themselves need none of this: they run inside ReliableMessagingModule.
 */

/** The command line: build it on an app context, or run it and get its exit code. */
export {
  createDeadLetterCli,
  runDeadLetterCli,
  type CliApp,
  type DeadLetterCliIo,
} from './dead-letter-admin/cli/dead-letter-cli';

/** The HTTP admin API, off unless an app imports `DeadLetterAdminModule.register()`. */
export { DeadLetterAdminModule } from './dead-letter-admin/http/dead-letter-admin.module';
export type { DeadLetterAdminOptions } from './dead-letter-admin/http/dead-letter-admin.options';

/** The headers a dead letter gains (reason, error, origin), beside its original headers and body. */
export { DEAD_LETTER_HEADERS } from './reliable-messaging.constants';

/** The operations the command line and the HTTP API share, for scripts and tests of your own. */
export { DeadLetterOperations } from './dead-letter-admin/dead-letter-operations.service';
export type { DeadLetterSelection } from './dead-letter-admin/dead-letter-selection';
export type {
  DeadLetterOperationOptions,
  DeadLetterOperationResult,
  DeadLetterListResult,
} from './dead-letter-admin/dead-letter-operation';
export type { DeadLetterFilter } from './dead-letter-admin/dead-letter-filter';
export type { DeadLetter } from './dead-letter/dead-letter-record';

/** The operations on parked outbox rows (rows the relay set aside as unpublishable) that the command line and the HTTP API share. */
export { OutboxOperations } from './outbox-admin/outbox-operations.service';
export type { OutboxFilter } from './outbox-admin/outbox-filter';
export type {
  OutboxSelection,
  OutboxOperationOptions,
  OutboxOperationResult,
  OutboxListResult,
  ParkedOutboxRow,
  ParkedOutboxRowDetail,
} from './outbox-admin/outbox-operation';

/** The audit trail of every replay, edit and purge of dead letters, and every retry and discard of parked outbox rows. */
export { DeadLetterAudit, type DeadLetterAuditRecord } from './dead-letter-admin/dead-letter-audit.service';
export type {
  DeadLetterAuditAction,
  DeadLetterAuditOutcome,
} from './dead-letter-admin/dead-letter-audit.entity';

/**
 * What the operations throw: a query that cannot run as written, a message id no dead-letter queue holds, an id
 * no parked outbox row has, and a selection that matched nothing (unless `allowEmpty`).
 */
export { InvalidDeadLetterQueryError } from './errors/invalid-dead-letter-query.error';
export { DeadLetterNotFoundError } from './errors/dead-letter-not-found.error';
export { OutboxRowNotFoundError } from './errors/outbox-row-not-found.error';
export { EmptySelectionError } from './errors/empty-selection.error';
