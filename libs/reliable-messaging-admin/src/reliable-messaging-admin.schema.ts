import { AllowOutboxAuditActions1767225600006 } from './audit/allow-outbox-audit-actions.migration';
import { CreateDeadLetterAudit1767225600003 } from './audit/create-dead-letter-audit.migration';
import { DeadLetterAuditEntity } from './audit/dead-letter-audit.entity';

/** The admin package's TypeORM entities (the audit trail): add them to the DataSource's `entities`. */
export const ADMIN_ENTITIES = [DeadLetterAuditEntity];

/**
 * The admin package's TypeORM migrations, oldest first: add them to the DataSource's `migrations` beside
 * RELIABLE_MESSAGING_MIGRATIONS, with `migrationsRun: true` (never `synchronize`).
 */
export const ADMIN_MIGRATIONS = [CreateDeadLetterAudit1767225600003, AllowOutboxAuditActions1767225600006];
