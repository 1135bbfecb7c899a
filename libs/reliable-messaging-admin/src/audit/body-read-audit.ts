import type { DeadLetterAudit } from './dead-letter-audit.service';

/** A message body about to be shown (a dead letter's, with its queue, or a parked outbox row's), or a saga instance's state. */
export type BodyRead =
  | { deadLetterQueue: string; messageId: string }
  | { outboxRowId: string; messageId: string }
  | { sagaName: string; correlationKey: string };

/**
 * Records, before a body or a saga's state is shown, who read it: either may hold personal or payment data,
 * and who saw it matters as much as who replayed it. As with the operations, a read whose record cannot be
 * written is not served.
 */
export async function auditBodyRead(audit: DeadLetterAudit, actor: string, read: BodyRead): Promise<void> {
  await audit.note({
    action: 'read',
    actor,
    queue: 'deadLetterQueue' in read ? read.deadLetterQueue : undefined,
    selection:
      'deadLetterQueue' in read
        ? { queue: read.deadLetterQueue }
        : 'outboxRowId' in read
          ? { outboxRow: read.outboxRowId }
          : { saga: read.sagaName, correlationKey: read.correlationKey },
    messageIds: 'messageId' in read ? [read.messageId] : [],
    outcome: 'completed',
  });
}
