import { appendFile, readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import {
  errorMessage,
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
  uuidv7,
} from 'nestjs-reliable-messaging/operations';
import { DEAD_LETTER_AUDIT_TABLE } from './dead-letter-audit-table';
import type { DeadLetterAuditAction, DeadLetterAuditOutcome } from './dead-letter-audit.entity';

/** The default JSON-lines audit file, in the working directory, used when there is no DataSource. */
export const DEFAULT_DEAD_LETTER_AUDIT_FILE = 'dead-letter-audit.jsonl';

/** One audit record, as stored. */
export interface DeadLetterAuditRecord {
  id: string;
  action: DeadLetterAuditAction;
  actor: string;
  queue: string | null;
  selection: Record<string, unknown>;
  messageIds: string[];
  messageCount: number;
  outcome: DeadLetterAuditOutcome;
  details: Record<string, unknown>;
  startedAt: Date;
  finishedAt: Date | null;
}

/** What an operation says about itself before it starts. */
export interface DeadLetterAuditStart {
  action: DeadLetterAuditAction;
  actor: string;
  queue?: string;
  selection: Record<string, unknown>;
  details?: Record<string, unknown>;
}

/**
 * The audit trail of replays, edits and purges, reads of message bodies and refused admin tokens: the `rm_dead_letter_audit` table when the module has a
 * DataSource, else a JSON-lines file (`deadLetterAuditFile`). A record is written before an operation changes
 * anything (an operation whose audit cannot be written does not run) and completed when it ends.
 */
@Injectable()
export class DeadLetterAudit {
  private readonly file: string;

  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {
    this.file = resolve(process.cwd(), options.deadLetterAuditFile ?? DEFAULT_DEAD_LETTER_AUDIT_FILE);
  }

  /** Where records go: the table, or the file's path. */
  get destination(): string {
    return this.options.dataSource ? `table ${DEAD_LETTER_AUDIT_TABLE}` : this.file;
  }

  /** Writes the `started` record; throws, saying how to fix it, when it cannot be written. */
  async begin(start: DeadLetterAuditStart): Promise<DeadLetterAuditRecord> {
    const record: DeadLetterAuditRecord = {
      id: uuidv7(),
      action: start.action,
      actor: start.actor,
      queue: start.queue ?? null,
      selection: start.selection,
      messageIds: [],
      messageCount: 0,
      outcome: 'started',
      details: start.details ?? {},
      startedAt: new Date(),
      finishedAt: null,
    };
    try {
      await this.insert(record);
    } catch (error) {
      throw new Error(
        `the ${record.action} was not started because its audit record could not be written to ${this.destination} ` +
          `(${errorMessage(error)}); ${this.options.dataSource ? 'add RELIABLE_MESSAGING_MIGRATIONS to the DataSource migrations' : 'set deadLetterAuditFile to a writable path'}`,
        { cause: error },
      );
    }
    return record;
  }

  /**
   * Writes a record of something done at once: a read of a message body (`read`), a refused bearer token
   * (`token-refused`) or console sign-in (`sign-in-failed`). Throws when it cannot be written.
   */
  async note(
    entry: DeadLetterAuditStart & {
      messageIds?: string[];
      outcome: Exclude<DeadLetterAuditOutcome, 'started'>;
    },
  ): Promise<DeadLetterAuditRecord> {
    const now = new Date();
    const record: DeadLetterAuditRecord = {
      id: uuidv7(),
      action: entry.action,
      actor: entry.actor,
      queue: entry.queue ?? null,
      selection: entry.selection,
      messageIds: entry.messageIds ?? [],
      messageCount: entry.messageIds?.length ?? 0,
      outcome: entry.outcome,
      details: entry.details ?? {},
      startedAt: now,
      finishedAt: now,
    };
    await this.insert(record);
    return record;
  }

  /** Completes a record with the messages the operation touched and how it ended. */
  async finish(
    record: DeadLetterAuditRecord,
    result: {
      messageIds: string[];
      outcome: Exclude<DeadLetterAuditOutcome, 'started'>;
      details?: Record<string, unknown>;
    },
  ): Promise<DeadLetterAuditRecord> {
    const finished: DeadLetterAuditRecord = {
      ...record,
      messageIds: result.messageIds,
      messageCount: result.messageIds.length,
      outcome: result.outcome,
      details: { ...record.details, ...result.details },
      finishedAt: new Date(),
    };
    if (this.options.dataSource) {
      await this.options.dataSource.query(
        `UPDATE "${DEAD_LETTER_AUDIT_TABLE}" SET "message_ids" = $2, "message_count" = $3, "outcome" = $4, ` +
          `"details" = $5, "finished_at" = $6 WHERE "id" = $1`,
        [
          finished.id,
          JSON.stringify(finished.messageIds),
          finished.messageCount,
          finished.outcome,
          JSON.stringify(finished.details),
          finished.finishedAt,
        ],
      );
    } else {
      await this.append(finished);
    }
    return finished;
  }

  /** The latest records, newest first. */
  async recent(limit = 20): Promise<DeadLetterAuditRecord[]> {
    if (this.options.dataSource) {
      const rows = await this.options.dataSource.query<Array<Record<string, unknown>>>(
        `SELECT * FROM "${DEAD_LETTER_AUDIT_TABLE}" ORDER BY "started_at" DESC, "id" DESC LIMIT $1`,
        [limit],
      );
      return rows.map((row) => ({
        id: row.id as string,
        action: row.action as DeadLetterAuditAction,
        actor: row.actor as string,
        queue: (row.queue as string | null) ?? null,
        selection: row.selection as Record<string, unknown>,
        messageIds: row.message_ids as string[],
        messageCount: Number(row.message_count),
        outcome: row.outcome as DeadLetterAuditOutcome,
        details: row.details as Record<string, unknown>,
        startedAt: new Date(row.started_at as string),
        finishedAt: row.finished_at ? new Date(row.finished_at as string) : null,
      }));
    }
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch {
      return [];
    }
    const latest = new Map<string, DeadLetterAuditRecord>();
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        const parsed = JSON.parse(line) as DeadLetterAuditRecord;
        latest.set(parsed.id, {
          ...parsed,
          startedAt: new Date(parsed.startedAt),
          finishedAt: parsed.finishedAt ? new Date(parsed.finishedAt) : null,
        });
      } catch {
        continue;
      }
    }
    // NOTE: ids are UUIDv7, so their order is the order the operations started in.
    return [...latest.values()].sort((a, b) => b.id.localeCompare(a.id)).slice(0, limit);
  }

  private async insert(record: DeadLetterAuditRecord): Promise<void> {
    if (!this.options.dataSource) return this.append(record);
    await this.options.dataSource.query(
      `INSERT INTO "${DEAD_LETTER_AUDIT_TABLE}" ` +
        `("id", "action", "actor", "queue", "selection", "message_ids", "message_count", "outcome", "details", "started_at", "finished_at") ` +
        `VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
        record.id,
        record.action,
        record.actor,
        record.queue,
        JSON.stringify(record.selection),
        JSON.stringify(record.messageIds),
        record.messageCount,
        record.outcome,
        JSON.stringify(record.details),
        record.startedAt,
        record.finishedAt,
      ],
    );
  }

  private async append(record: DeadLetterAuditRecord): Promise<void> {
    await appendFile(this.file, `${JSON.stringify(record)}\n`, { encoding: 'utf8', mode: 0o600 });
  }
}
