import { Get, Inject, Injectable, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { parseCancelTarget, parseScheduledFilter } from '../../scheduled/scheduled-filter';
import { ScheduledOperations } from '../../scheduled/scheduled-operations.service';
import { adminActor } from '../admin-actor';
import { OperatorOnly } from '../admin-role';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';
import { ConsoleContext } from './console-context';
import { CONSOLE_FORM, field, redirectTo, sendHtml, type ConsoleRequest } from './console-http';
import { listLimit } from './console-selection';
import { query } from './views/format';
import { layout } from './views/layout.view';
import { operationPreviewView } from './views/operation.view';
import { scheduledView, type ScheduledFilterFields, type ScheduledPage } from './views/scheduled.view';

/**
 * The scheduled messages: the filtered list in delivery order, and a cancel in two steps as an outbox discard
 * (a GET shows what it would cancel and a form; its POST, confirmed, cancels and leads to the audit record).
 * Refused with the reason when the app has no database.
 */
@Injectable()
export class ConsoleScheduledController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly scheduled: ScheduledOperations,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('scheduled')
  async list(
    @Req() request: Request,
    @Res() response: Response,
    @Query() source: Record<string, unknown>,
  ): Promise<void> {
    this.requireDatabase();
    const frame = this.console.frame(request);
    const filter = fieldsOf(source);
    const page: ScheduledPage = { filter, rows: [], more: false, maxBatchSize: this.options.maxBatchSize };
    try {
      const limit = listLimit(filter.limit, this.options.maxBatchSize);
      Object.assign(page, await this.scheduled.list(parseScheduledFilter(filter), { limit }));
    } catch (error) {
      if (!(error instanceof InvalidDeadLetterQueryError)) throw error;
      page.error = error.message;
    }
    sendHtml(
      response,
      layout(frame, 'Scheduled messages', 'scheduled', scheduledView(frame, page)),
      page.error ? 400 : 200,
    );
  }

  @Get('scheduled/cancel')
  @OperatorOnly()
  async cancelPreview(
    @Req() request: Request,
    @Res() response: Response,
    @Query() source: Record<string, unknown>,
  ): Promise<void> {
    this.requireDatabase();
    const frame = this.console.frame(request);
    const target = parseCancelTarget({
      messageId: field(source, 'messageId'),
      idempotencyKey: field(source, 'idempotencyKey'),
    });
    const preview = await this.scheduled.cancel(target, {
      actor: adminActor(request, this.options),
      dryRun: true,
      allowEmpty: true,
    });
    const content = operationPreviewView(
      frame,
      {
        path: 'scheduled/cancel',
        noun: 'scheduled message(s)',
        done: 'cancelled (deleted for good: never sent)',
        verb: 'Cancel',
        destructive: true,
        back: `${this.console.base}/scheduled`,
      },
      { ...target },
      { messageIds: preview.messageIds, more: false },
    );
    sendHtml(response, layout(frame, 'Cancel scheduled messages', 'scheduled', content));
  }

  @Post('scheduled/cancel')
  @OperatorOnly()
  async cancel(@Req() request: ConsoleRequest, @Res() response: Response): Promise<void> {
    this.requireDatabase();
    const form = request[CONSOLE_FORM];
    if (field(form, 'confirm') !== 'yes') {
      throw new InvalidDeadLetterQueryError(
        'a cancel deletes scheduled messages for good: tick the confirmation to cancel them; nothing was cancelled',
      );
    }
    const note = field(form, 'note')?.trim();
    const result = await this.scheduled.cancel(
      parseCancelTarget({
        messageId: field(form, 'messageId'),
        idempotencyKey: field(form, 'idempotencyKey'),
      }),
      { actor: adminActor(request, this.options), note: note ? note.slice(0, 1000) : undefined },
    );
    redirectTo(response, `${this.console.base}/audit${query({ highlight: result.auditId })}`);
  }

  private requireDatabase(): void {
    if (this.console.databaseUnavailable) {
      throw new InvalidDeadLetterQueryError(this.console.databaseUnavailable);
    }
  }
}

function fieldsOf(source: Record<string, unknown>): ScheduledFilterFields {
  const fields: ScheduledFilterFields = {};
  for (const name of ['type', 'dueBefore', 'after', 'limit'] as const) {
    const value = field(source, name)?.trim();
    if (value) fields[name] = value;
  }
  return fields;
}
