import { Module } from '@nestjs/common';
import { DeadLetterAudit } from './audit/dead-letter-audit.service';
import { DeadLetterOperations } from './dead-letter/dead-letter-operations.service';
import { OutboxOperations } from './outbox/outbox-operations.service';
import { SagaOperations } from './saga/saga-operations.service';
import { ScheduledOperations } from './scheduled/scheduled-operations.service';

/**
 * The operations on dead letters, parked outbox rows, scheduled messages and saga instances, and the audit trail they write: what the `dlq` command
 * line, the HTTP admin API and your own scripts run on. It builds on what `ReliableMessagingModule` (global)
 * exports, so import it beside that module, in an app (or a tool's app context) that imports it too.
 * `DeadLetterAdminModule.register()` imports it for you.
 *
 * @example
 * imports: [ReliableMessagingModule.forRoot({ ... }), ReliableMessagingAdminModule]
 */
@Module({
  providers: [DeadLetterAudit, DeadLetterOperations, OutboxOperations, ScheduledOperations, SagaOperations],
  exports: [DeadLetterAudit, DeadLetterOperations, OutboxOperations, ScheduledOperations, SagaOperations],
})
export class ReliableMessagingAdminModule {}
