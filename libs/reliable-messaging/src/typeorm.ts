/**
 * The module's tables, imported as `nestjs-reliable-messaging/typeorm`: add the entities and migrations to the app's
 * TypeORM DataSource (`migrationsRun: true`, never `synchronize`), so the tables exist before the module starts.
 */

/** Every entity and every migration, oldest first: what a DataSource needs. */
export { RELIABLE_MESSAGING_ENTITIES, RELIABLE_MESSAGING_MIGRATIONS } from './reliable-messaging.schema';

/** The outbox: one row per message waiting for the relay, and its migration. */
export { OutboxMessageEntity, type OutboxStatus } from './outbox/outbox-message.entity';
export { CreateOutbox1767225600000 } from './outbox/create-outbox.migration';

/** Scheduled messages: one row per message published with `deliverAt` or `delayMs` and not yet due, and its migration. */
export { ScheduledMessageEntity } from './scheduling/scheduled-message.entity';
export { CreateScheduled1767225600027 } from './scheduling/create-scheduled.migration';

/** The inbox: one row per message a deduplicating consumer handled, and its migration. */
export { InboxMessageEntity } from './inbox/inbox-message.entity';
export { CreateInbox1767225600001 } from './inbox/create-inbox.migration';

/** The HTTP idempotency keys of `@Idempotent()` routes (`nestjs-reliable-messaging/http`), and their migration. */
export { IdempotencyKeyEntity } from './idempotency/idempotency-key.entity';
export { CreateIdempotencyKeys1767225600004 } from './idempotency/create-idempotency-keys.migration';
export { ScopeIdempotencyKeysByCaller1767225600026 } from './idempotency/scope-idempotency-keys-by-caller.migration';

/** The claim check's PostgreSQL store: one row per body kept out of the broker, and its migration. */
export { ClaimCheckBodyEntity } from './claim-check/claim-check-body.entity';
export { CreateClaimCheck1767225600005 } from './claim-check/create-claim-check.migration';

/** Saga instances (`@Saga()`) and the history of the messages their steps handled, and their migration. */
export { SagaInstanceEntity } from './saga/saga-instance.entity';
export { SagaHistoryEntity } from './saga/saga-history.entity';
export { CreateSagas1767225600040 } from './saga/create-sagas.migration';

/**
 * Whether an error says the database cannot serve right now (connection lost or refused, server restarting,
 * backend terminated, no connection to spare) rather than that the query was wrong: an HTTP layer answers 503
 * and `Retry-After` for it, as the module's consumers wait it out without spending an attempt.
 */
export { isDatabaseUnavailableError } from './database/database-errors';
