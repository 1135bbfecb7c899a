import { AllowAccessAuditActions1767225600026 } from './audit/allow-access-audit-actions.migration';
import { AllowScheduledCancelAudit1767225600041 } from './audit/allow-scheduled-cancel-audit.migration';
import { AllowOutboxAuditActions1767225600006 } from './audit/allow-outbox-audit-actions.migration';
import { CreateDeadLetterAudit1767225600003 } from './audit/create-dead-letter-audit.migration';
import { DeadLetterAuditEntity } from './audit/dead-letter-audit.entity';
import { AdminSessionRevocationEntity } from './session/admin-session-revocation.entity';
import { CreateAdminSessionRevocation1767225600027 } from './session/create-admin-session-revocation.migration';

/**
 * The admin package's TypeORM entities (the audit trail, the signed-out console sessions): add them to the
 * DataSource's `entities`.
 */
export const ADMIN_ENTITIES = [DeadLetterAuditEntity, AdminSessionRevocationEntity];

/**
 * The admin package's TypeORM migrations, oldest first: add them to the DataSource's `migrations` beside
 * RELIABLE_MESSAGING_MIGRATIONS, with `migrationsRun: true` (never `synchronize`).
 */
export const ADMIN_MIGRATIONS = [
  CreateDeadLetterAudit1767225600003,
  AllowOutboxAuditActions1767225600006,
  AllowAccessAuditActions1767225600026,
  CreateAdminSessionRevocation1767225600027,
  AllowScheduledCancelAudit1767225600041,
];
