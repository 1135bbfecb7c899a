import { Inject, Injectable } from '@nestjs/common';
import { ScheduledMessages } from 'nestjs-reliable-messaging';
import {
  errorMessage,
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
} from 'nestjs-reliable-messaging/operations';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { checkLimit } from '../dead-letter/dead-letter-selection';
import { EmptySelectionError } from '../errors/empty-selection.error';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { cursorAfter, cursorOf, parseCancelTarget } from './scheduled-filter';
import type {
  ScheduledCancelOptions,
  ScheduledCancelResult,
  ScheduledCancelTarget,
  ScheduledFilter,
  ScheduledListResult,
} from './scheduled-operation';

/** The most scheduled messages one cancel by idempotency key deletes; more is refused. */
export const MAX_CANCEL = 500;
/** The most rows one list returns, whatever its limit: `more` and `next` page on. */
export const MAX_PAGE = 500;

/**
 * The operations on scheduled messages (published with `deliverAt` or `delayMs`, not yet due) that the command
 * line and the admin API share: a bounded, filtered list in delivery order with keyset paging, and a cancel by
 * message id or idempotency key, which can be a dry run and is audited (`scheduled-cancel`). Needs the module's
 * `dataSource` option.
 */
@Injectable()
export class ScheduledOperations {
  constructor(
    private readonly scheduled: ScheduledMessages,
    private readonly audit: DeadLetterAudit,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
  ) {}

  /**
   * Waiting messages matching the filter, the first due first, up to `limit`, at most (and by default) MAX_PAGE
   * a page: `next` is the cursor of the next one.
   */
  async list(filter: ScheduledFilter, options: { limit?: number } = {}): Promise<ScheduledListResult> {
    this.requireDatabase();
    const limit = Math.min(checkLimit(options.limit), MAX_PAGE);
    const found = await this.scheduled.list({
      limit: limit + 1,
      type: filter.type,
      dueBefore: filter.dueBefore,
      after: filter.after === undefined ? undefined : cursorOf(filter.after),
    });
    const rows = found.slice(0, limit);
    const more = found.length > limit;
    return { rows, more, ...(more ? { next: cursorAfter(rows[rows.length - 1]) } : {}) };
  }

  /**
   * Cancels a waiting message by its message id, or every waiting message of an idempotency key (at most
   * MAX_CANCEL). Audited before it deletes; a message already due is in the outbox and is not cancelled.
   */
  async cancel(
    target: ScheduledCancelTarget,
    options: ScheduledCancelOptions,
  ): Promise<ScheduledCancelResult> {
    this.requireDatabase();
    const checked = parseCancelTarget(target);
    if (typeof options.actor !== 'string' || options.actor.trim() === '') {
      throw new InvalidDeadLetterQueryError('a scheduled cancel needs an actor for its audit record');
    }
    const found = await this.scheduled.list({ ...checked, limit: MAX_CANCEL + 1 });
    if (found.length > MAX_CANCEL) {
      throw new InvalidDeadLetterQueryError(
        `more than ${MAX_CANCEL} scheduled messages share this idempotency key: cancel them from the app (ScheduledMessages.cancel)`,
      );
    }
    const result: ScheduledCancelResult = {
      action: 'scheduled-cancel',
      dryRun: options.dryRun === true,
      messageIds: found.map((row) => row.messageId),
      cancelled: 0,
    };
    if (found.length === 0 && !options.allowEmpty) throw new EmptySelectionError('scheduled cancel');
    if (result.dryRun) return result;
    const record = await this.audit.begin({
      action: 'scheduled-cancel',
      actor: options.actor,
      selection: { ...checked },
      details: options.note ? { note: options.note } : {},
    });
    result.auditId = record.id;
    let cancelled: number;
    try {
      cancelled = await this.scheduled.cancel(checked);
    } catch (error) {
      await this.audit
        .finish(record, { messageIds: [], outcome: 'failed', details: { error: errorMessage(error) } })
        .catch(() => undefined);
      throw error;
    }
    // The delete's count is the truth: a message that fell due between the read and the delete went out, and one
    // scheduled under the key meanwhile went with the others.
    result.cancelled = cancelled;
    await this.audit.finish(record, {
      messageIds: result.messageIds,
      outcome: cancelled > 0 || options.allowEmpty ? 'completed' : 'failed',
      details: { cancelled },
    });
    if (cancelled === 0 && !options.allowEmpty) throw new EmptySelectionError('scheduled cancel', record.id);
    return result;
  }

  private requireDatabase(): void {
    if (!this.options.dataSource) {
      throw new InvalidDeadLetterQueryError(
        'there are no scheduled messages without the module option dataSource',
      );
    }
  }
}
