/**
 * The admin package's tables, imported as `nestjs-reliable-messaging-admin/typeorm`: the audit trail of the
 * operator's actions on dead letters and parked outbox rows, and the console sessions signed out early. Add the entities and migrations to the app's TypeORM
 * DataSource beside the core's (`nestjs-reliable-messaging/typeorm`). Without a DataSource the audit trail goes
 * to a JSON-lines file (`deadLetterAuditFile`) and needs none of this.
 */

/** Every entity and every migration, oldest first: what a DataSource needs. */
export { ADMIN_ENTITIES, ADMIN_MIGRATIONS } from './reliable-messaging-admin.schema';

/** The audit trail: one row per replay, edit, purge, retry, discard, scheduled cancel, body read or refused token, and its migrations. */
export { DeadLetterAuditEntity } from './audit/dead-letter-audit.entity';
export { CreateDeadLetterAudit1767225600003 } from './audit/create-dead-letter-audit.migration';
export { AllowOutboxAuditActions1767225600006 } from './audit/allow-outbox-audit-actions.migration';
export { AllowAccessAuditActions1767225600026 } from './audit/allow-access-audit-actions.migration';
export { AllowScheduledCancelAudit1767225600041 } from './audit/allow-scheduled-cancel-audit.migration';

/** Console sessions signed out before they expired, refused by every replica, and their migration. */
export { AdminSessionRevocationEntity } from './session/admin-session-revocation.entity';
export { CreateAdminSessionRevocation1767225600027 } from './session/create-admin-session-revocation.migration';
