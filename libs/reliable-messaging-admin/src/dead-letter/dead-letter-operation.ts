import type { DeadLetterAuditAction } from '../audit/dead-letter-audit.entity';
import type { DeadLetterSummary } from './dead-letter-summary';

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

/** The bytes one list or count reads unless it says otherwise: 64 MiB. */
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;

/** How a list or a count runs. */
export interface DeadLetterListOptions extends Pick<DeadLetterOperationOptions, 'limit' | 'onProgress'> {
  /**
   * The most bytes to read (bodies included: the broker delivers each one whole, matching or not, and roughly
   * the headers); the read stops once it reached them, and says so (`stoppedAtReadBudget`). Default: 64 MiB.
   */
  maxReadBytes?: number;
}

/** What a list found: dead letters without their bodies (`show` reads one body). */
export interface DeadLetterListResult {
  deadLetters: DeadLetterSummary[];
  scanned: number;
  /** Messages were left unread (the limit, or the read budget, was reached): narrow the filter or repeat. */
  more: boolean;
  /** Bytes read, bodies included. */
  readBytes: number;
  /** The read stopped at `maxReadBytes`: the list is partial. */
  stoppedAtReadBudget: boolean;
}

/** What a count by reason found. */
export interface DeadLetterReasonCount {
  /** Dead letters by reason, most first. */
  reasons: Array<{ reason: string; count: number }>;
  /** Dead letters counted. */
  counted: number;
  scanned: number;
  more: boolean;
  readBytes: number;
  /** The count stopped at `maxReadBytes`: it is partial. */
  stoppedAtReadBudget: boolean;
}
