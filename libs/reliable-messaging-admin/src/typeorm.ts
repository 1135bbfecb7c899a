/**
 * The admin package's table, imported as `nestjs-reliable-messaging-admin/typeorm`: the audit trail of the
 * operator's actions on dead letters and parked outbox rows. Add the entities and migrations to the app's TypeORM
 * DataSource beside the core's (`nestjs-reliable-messaging/typeorm`). Without a DataSource the audit trail goes
 * to a JSON-lines file (`deadLetterAuditFile`) and needs none of this.
 */

/** Every entity and every migration, oldest first: what a DataSource needs. */
export { ADMIN_ENTITIES, ADMIN_MIGRATIONS } from './reliable-messaging-admin.schema';

/** The audit trail: one row per replay, edit, purge, retry or discard, and its migrations. */
export { DeadLetterAuditEntity } from './audit/dead-letter-audit.entity';
export { CreateDeadLetterAudit1767225600003 } from './audit/create-dead-letter-audit.migration';
export { AllowOutboxAuditActions1767225600006 } from './audit/allow-outbox-audit-actions.migration';
