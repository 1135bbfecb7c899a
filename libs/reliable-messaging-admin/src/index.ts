/**
 * The operator's tools for dead letters, parked outbox rows, scheduled messages and saga instances, the package
 * `nestjs-reliable-messaging-admin`: the operations (dead letters: list, show, replay, edit, purge; parked outbox
 * rows: list, show, retry, discard; scheduled messages: list, cancel; saga instances: list, show)
 * with the audit trail they write, their Nest module, and the opt-in HTTP admin API and console. The command line
 * is `nestjs-reliable-messaging-admin/cli` (and the package's `dlq` bin), the audit table
 * `nestjs-reliable-messaging-admin/typeorm`. Dead-lettering and the outbox themselves need none of this: they run
 * inside ReliableMessagingModule, which this package builds on through its public entry points only.
 */

/** The operations and the audit trail as Nest providers: import it beside ReliableMessagingModule. */
export { ReliableMessagingAdminModule } from './reliable-messaging-admin.module';

/** The HTTP admin API (and the console), off unless an app imports `DeadLetterAdminModule.register()`. */
export { DeadLetterAdminModule } from './http/dead-letter-admin.module';
export type {
  DeadLetterAdminOptions,
  AdminTokenOption,
  NamedAdminTokenOption,
  AdminAuthFailureLimit,
} from './http/dead-letter-admin.options';
/** What an admin token may do: `viewer` reads, `operator` also replays, edits, purges, retries, discards and cancels. */
export type { AdminRole } from './http/admin-role';

/** The operations the command line and the HTTP API share, for scripts and tests of your own. */
export { DeadLetterOperations } from './dead-letter/dead-letter-operations.service';
/** The consumer queues a process without the app's consumers may act on (the `dlq` bin's `RM_QUEUES`). */
export { DECLARED_DEAD_LETTER_QUEUES } from './dead-letter/declared-queues';
export type { DeadLetterSelection } from './dead-letter/dead-letter-selection';
export type {
  DeadLetterOperationOptions,
  DeadLetterOperationResult,
  DeadLetterListOptions,
  DeadLetterListResult,
  DeadLetterReasonCount,
} from './dead-letter/dead-letter-operation';
export type { DeadLetterSummary } from './dead-letter/dead-letter-summary';
export type { DeadLetterFilter } from './dead-letter/dead-letter-filter';

/** The operations on parked outbox rows (rows the relay set aside as unpublishable) that the command line and the HTTP API share. */
export { OutboxOperations } from './outbox/outbox-operations.service';
export type { OutboxFilter } from './outbox/outbox-filter';
export type { OutboxSelection } from './outbox/outbox-selection';
export type {
  OutboxOperationOptions,
  OutboxOperationResult,
  OutboxListResult,
  ParkedOutboxRow,
  ParkedOutboxRowDetail,
} from './outbox/outbox-operation';

/**
 * The operations on scheduled messages (not yet due) that the command line and the HTTP API share: a bounded,
 * filtered list with keyset paging, and an audited cancel by message id or idempotency key.
 */
export { ScheduledOperations } from './scheduled/scheduled-operations.service';
export type {
  ScheduledFilter,
  ScheduledListResult,
  ScheduledCancelTarget,
  ScheduledCancelOptions,
  ScheduledCancelResult,
} from './scheduled/scheduled-operation';

/**
 * The reads of saga instances that the command line and the HTTP API share: the instances of a saga, and one in
 * full (state cut past 16 KiB, history newest first, pending timeouts).
 */
export { SagaOperations } from './saga/saga-operations.service';
export type { SagaListResult, SagaInstanceDetail } from './saga/saga-operation';

/**
 * The audit trail of every replay, edit and purge of dead letters, every retry and discard of parked outbox rows,
 * and every cancel of scheduled messages.
 */
export { DeadLetterAudit, type DeadLetterAuditRecord } from './audit/dead-letter-audit.service';
export type { DeadLetterAuditAction, DeadLetterAuditOutcome } from './audit/dead-letter-audit.entity';

/**
 * What the operations throw: a query that cannot run as written, a message id no dead-letter queue holds, an id
 * no parked outbox row has, a saga instance that does not exist, and a selection that matched nothing (unless
 * `allowEmpty`).
 */
export { InvalidDeadLetterQueryError } from './errors/invalid-dead-letter-query.error';
export { DeadLetterNotFoundError } from './errors/dead-letter-not-found.error';
export { OutboxRowNotFoundError } from './errors/outbox-row-not-found.error';
export { SagaInstanceNotFoundError } from './errors/saga-instance-not-found.error';
export { EmptySelectionError } from './errors/empty-selection.error';
