import type { DeadLetterAudit } from './dead-letter-audit.service';

/** A message body about to be shown: a dead letter's (with its queue) or a parked outbox row's. */
export type BodyRead =
  { deadLetterQueue: string; messageId: string } | { outboxRowId: string; messageId: string };

/**
 * Records, before a body is shown, who read it: a body may hold personal or payment data, and who saw it
 * matters as much as who replayed it. As with the operations, a read whose record cannot be written is not
 * served.
 */
export async function auditBodyRead(audit: DeadLetterAudit, actor: string, read: BodyRead): Promise<void> {
  await audit.note({
    action: 'read',
    actor,
    queue: 'deadLetterQueue' in read ? read.deadLetterQueue : undefined,
    selection: 'deadLetterQueue' in read ? { queue: read.deadLetterQueue } : { outboxRow: read.outboxRowId },
    messageIds: [read.messageId],
    outcome: 'completed',
  });
}
