import type { DeadLetter } from 'nestjs-reliable-messaging/operations';
import type { DeadLetterAuditAction } from '../audit/dead-letter-audit.entity';

/** How an operation runs. */
export interface DeadLetterOperationOptions {
  /** Who runs it, for the audit record (an OS user, a token name). */
  actor: string;
  /** Report what would be done and change nothing (no audit record either). Default: false. */
  dryRun?: boolean;
  /** The most messages to touch; more matching ones stay for a next run (`more: true`). Default: 1000. */
  limit?: number;
  /** Matching nothing is a normal outcome, not an EmptySelectionError. Default: false. */
  allowEmpty?: boolean;
  /** A free-text note for the audit record (a ticket, a reason). */
  note?: string;
  /** Called as messages are read, for a progress bar. */
  onProgress?: (scanned: number, total: number) => void;
}

/** Stands in `messageIds` for a dead letter that has no message id. */
export const NO_MESSAGE_ID = '(no message id)';

/** What an operation did, or would do in a dry run. */
export interface DeadLetterOperationResult {
  action: Extract<DeadLetterAuditAction, 'replay' | 'edit-replay' | 'purge'>;
  dryRun: boolean;
  /** The ids of the messages replayed or purged (or that would be); NO_MESSAGE_ID for one without. */
  messageIds: string[];
  /** Messages that matched but could not be handled, and why; they stay in their dead-letter queue. */
  failures: Array<{ messageId?: string; error: string }>;
  /** Messages read. */
  scanned: number;
  /** The limit was reached with messages left unread: run again for the rest. */
  more: boolean;
  /** The audit record's id (none for a dry run). */
  auditId?: string;
}

/** What a list found. */
export interface DeadLetterListResult {
  deadLetters: DeadLetter[];
  scanned: number;
  more: boolean;
}
