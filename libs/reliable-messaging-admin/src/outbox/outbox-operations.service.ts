import { Inject, Injectable } from '@nestjs/common';
import {
  errorMessage,
  type MovedRow,
  OutboxStore,
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
  type StoredParkedRow,
} from 'nestjs-reliable-messaging/operations';
import { decodeStrictUtf8 } from 'nestjs-reliable-messaging/safe-json';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { checkLimit, describeSelection } from '../dead-letter/dead-letter-selection';
import { EmptySelectionError } from '../errors/empty-selection.error';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { OutboxRowNotFoundError } from '../errors/outbox-row-not-found.error';
import { checkOutboxId, type OutboxFilter } from './outbox-filter';
import { requireOutboxSelection, type OutboxSelection } from './outbox-selection';
import type {
  OutboxListResult,
  OutboxOperationOptions,
  OutboxOperationResult,
  ParkedOutboxRow,
  ParkedOutboxRowDetail,
} from './outbox-operation';

/** Rows retried or discarded per statement, between progress reports. */
const CHUNK = 500;

/**
 * The operations on parked outbox rows (rows the relay set aside as unpublishable: unroutable, no such exchange,
 * too large) that the command line and the admin API share: list with filters, show one, retry, discard. A
 * parked row holds back the later rows of its ordering key; a retried row keeps its id, so it still goes out
 * before them, and a discarded one releases them. Each retry and discard can be a dry run and is audited in the
 * dead-letter audit trail (`outbox-retry`, `outbox-discard`). Needs the module's `dataSource` option.
 */
@Injectable()
export class OutboxOperations {
  constructor(
    private readonly store: OutboxStore,
    private readonly audit: DeadLetterAudit,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /** Parked rows matching the filter, in row order, up to `limit` (default 1000). */
  async list(filter: OutboxFilter, options: { limit?: number } = {}): Promise<OutboxListResult> {
    this.requireOutbox();
    const limit = checkLimit(options.limit);
    const found = await this.store.findParked(filter, limit + 1);
    return { rows: found.slice(0, limit).map((row) => viewOf(row)), more: found.length > limit };
  }

  /** One parked row in full, by its row id or its message id. */
  async show(id: string): Promise<ParkedOutboxRowDetail> {
    this.requireOutbox();
    checkOutboxId(id);
    const [row] = await this.store.findParked({ ids: [id] }, 1);
    if (!row) throw new OutboxRowNotFoundError(id);
    const text = decodeText(row.body);
    return {
      ...viewOf(row),
      properties: row.properties,
      bodyEncoding: text === undefined ? 'base64' : 'utf8',
      body: text ?? row.body.toString('base64'),
    };
  }

  /**
   * Puts the selected parked rows back for the relay (once their cause is fixed: a queue bound, a limit raised).
   * Each keeps its id, so it goes out before the later rows of its ordering key.
   */
  async retry(selection: OutboxSelection, options: OutboxOperationOptions): Promise<OutboxOperationResult> {
    return this.operate('outbox-retry', selection, options, (ids) => this.store.resumeParked(ids));
  }

  /** Deletes the selected parked rows for good; the later rows of their ordering keys go out. */
  async discard(selection: OutboxSelection, options: OutboxOperationOptions): Promise<OutboxOperationResult> {
    return this.operate('outbox-discard', selection, options, (ids) => this.store.discardParked(ids));
  }

  private async operate(
    action: OutboxOperationResult['action'],
    selection: OutboxSelection,
    options: OutboxOperationOptions,
    act: (ids: string[]) => Promise<MovedRow[]>,
  ): Promise<OutboxOperationResult> {
    this.requireOutbox();
    const limit = checkLimit(options.limit);
    const verb = action === 'outbox-retry' ? 'retry' : 'discard';
    requireOutboxSelection(verb, selection);
    const { all: _all, ...filter } = selection;
    if (typeof options.actor !== 'string' || options.actor.trim() === '') {
      throw new InvalidDeadLetterQueryError(`an outbox ${verb} needs an actor for its audit record`);
    }
    const result: OutboxOperationResult = {
      action,
      dryRun: options.dryRun === true,
      ids: [],
      messageIds: [],
      more: false,
    };
    const found = await this.store.findParked(filter, limit + 1);
    result.more = found.length > limit;
    const selected = found.slice(0, limit);
    if (result.dryRun) {
      result.ids = selected.map((row) => row.id);
      result.messageIds = selected.map((row) => row.message_id);
      if (selected.length === 0 && !options.allowEmpty) throw new EmptySelectionError(`outbox ${verb}`);
      return result;
    }
    const record = await this.audit.begin({
      action,
      actor: options.actor,
      selection: describeSelection(selection, limit),
      details: options.note ? { note: options.note } : {},
    });
    result.auditId = record.id;
    const finish = (outcome: 'completed' | 'failed', details: Record<string, unknown>) =>
      this.audit.finish(record, { messageIds: result.messageIds, outcome, details });
    try {
      for (let start = 0; start < selected.length; start += CHUNK) {
        const moved = await act(selected.slice(start, start + CHUNK).map((row) => row.id));
        result.ids.push(...moved.map((row) => row.id));
        result.messageIds.push(...moved.map((row) => row.messageId));
        options.onProgress?.(Math.min(start + CHUNK, selected.length), selected.length);
      }
    } catch (error) {
      await finish('failed', { error: errorMessage(error), ids: result.ids }).catch(() => undefined);
      throw error;
    }
    if (result.ids.length === 0 && !options.allowEmpty) {
      await finish('failed', { error: 'the selection matched no parked row' });
      throw new EmptySelectionError(`outbox ${verb}`, record.id);
    }
    await finish('completed', { ids: result.ids });
    return result;
  }

  private requireOutbox(): void {
    if (!this.options.dataSource) {
      throw new InvalidDeadLetterQueryError('there is no outbox without the module option dataSource');
    }
  }
}

function viewOf(row: StoredParkedRow): ParkedOutboxRow {
  return {
    id: row.id,
    messageId: row.message_id,
    type: row.properties.type,
    exchange: row.exchange,
    routingKey: row.routing_key,
    orderingKey: row.ordering_key,
    reason: row.last_error,
    attempts: row.attempts,
    createdAt: row.created_at,
    parkedAt: row.parked_at,
    holdingBack: row.holding_back,
    bodyBytes: row.body.length,
  };
}

function decodeText(body: Buffer): string | undefined {
  const decoded = decodeStrictUtf8(body);
  return decoded.ok ? decoded.text : undefined;
}
