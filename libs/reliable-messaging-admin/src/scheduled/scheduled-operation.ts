import type { ScheduledRow } from 'nestjs-reliable-messaging';

/** Which scheduled messages a list shows; every field given must match. An empty filter matches all. */
export interface ScheduledFilter {
  /** The message type, exactly (e.g. `order.reminder`). */
  type?: string;
  /** Due before this moment. */
  dueBefore?: Date;
  /** Keyset paging: the `next` cursor of the previous page. */
  after?: string;
}

/** What a list found. */
export interface ScheduledListResult {
  rows: ScheduledRow[];
  /** The limit was reached with rows left. */
  more: boolean;
  /** With `more`, the cursor of the next page (`after`). */
  next?: string;
}

/** Which scheduled messages a cancel deletes: one by its message id, or every one of an idempotency key. */
export type ScheduledCancelTarget = { messageId: string } | { idempotencyKey: string };

/** How a cancel runs. */
export interface ScheduledCancelOptions {
  /** Who runs it, for the audit record (an OS user, a token name). */
  actor: string;
  /** Report what would be cancelled and change nothing (no audit record either). Default: false. */
  dryRun?: boolean;
  /** Matching nothing is a normal outcome, not an EmptySelectionError. Default: false. */
  allowEmpty?: boolean;
  /** A free-text note for the audit record (a ticket, a reason). */
  note?: string;
}

/** What a cancel did, or would do in a dry run. */
export interface ScheduledCancelResult {
  action: 'scheduled-cancel';
  dryRun: boolean;
  /** The message ids the cancel found waiting (for a dry run: would cancel), the first due first. */
  messageIds: string[];
  /**
   * How many the delete removed (0 for a dry run): fewer than `messageIds` when some fell due meanwhile (they
   * are in the outbox and go out), more when others were scheduled under the key meanwhile.
   */
  cancelled: number;
  /** The audit record's id (none for a dry run). */
  auditId?: string;
}
