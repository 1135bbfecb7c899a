import type { OutboundProperties } from 'nestjs-reliable-messaging/operations';

/** A parked outbox row as the operator's tools show it. */
export interface ParkedOutboxRow {
  /** The outbox row id: its place in the relay's order. */
  id: string;
  messageId: string;
  type?: string;
  exchange: string;
  routingKey: string;
  orderingKey: string | null;
  /** Why it was parked (`unroutable: ...`, `exchange-not-found: ...`, `payload-too-large: ...`). */
  reason: string | null;
  attempts: number;
  createdAt: Date;
  parkedAt: Date | null;
  /** The later rows of its ordering key (pending or parked) that wait for it to be retried or discarded. */
  holdingBack: number;
  /** Size of the body in bytes. */
  bodyBytes: number;
}

/** One parked row in full: its properties and its body (as text when it is UTF-8, else base64). */
export interface ParkedOutboxRowDetail extends ParkedOutboxRow {
  properties: OutboundProperties;
  bodyEncoding: 'utf8' | 'base64';
  body: string;
}

/** How a retry or discard runs. */
export interface OutboxOperationOptions {
  /** Who runs it, for the audit record (an OS user, a token name). */
  actor: string;
  /** Report what would be done and change nothing (no audit record either). Default: false. */
  dryRun?: boolean;
  /** The most rows to touch; more matching ones stay for a next run (`more: true`). Default: 1000. */
  limit?: number;
  /** Matching nothing is a normal outcome, not an EmptySelectionError. Default: false. */
  allowEmpty?: boolean;
  /** A free-text note for the audit record (a ticket, a reason). */
  note?: string;
  /** Called as rows are handled, for a progress bar. */
  onProgress?: (done: number, total: number) => void;
}

/** What a retry or discard did, or would do in a dry run. */
export interface OutboxOperationResult {
  action: 'outbox-retry' | 'outbox-discard';
  dryRun: boolean;
  /** The outbox row ids retried or discarded (or that would be), in row order. */
  ids: string[];
  /** Their message ids, in the same order. */
  messageIds: string[];
  /** The limit was reached with rows left: run again for the rest. */
  more: boolean;
  /** The audit record's id (none for a dry run). */
  auditId?: string;
}

/** What a list found. */
export interface OutboxListResult {
  rows: ParkedOutboxRow[];
  /** The limit was reached with rows left. */
  more: boolean;
}
