import { Get, Inject, Injectable, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { OutboxOperations } from '../../outbox/outbox-operations.service';
import { DeadLetterAudit } from '../../audit/dead-letter-audit.service';
import { adminActor } from '../admin-actor';
import { OperatorOnly } from '../admin-role';
import { auditBodyRead } from '../../audit/body-read-audit';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';
import { ConsoleContext } from './console-context';
import { CONSOLE_FORM, field, redirectTo, sendHtml, type ConsoleRequest } from './console-http';
import {
  listLimit,
  outboxFilterFieldsOf,
  outboxSelectionFieldsOf,
  outboxSelectionOf,
  pinnedSelection,
} from './console-selection';
import { query } from './views/format';
import { layout } from './views/layout.view';
import { operationPreviewView, type OperationCopy, type SelectionFields } from './views/operation.view';
import { outboxRowView, outboxView, type OutboxPage } from './views/outbox.view';

type Action = 'retry' | 'discard';

/**
 * The outbox's parked rows: the filtered list, one row in full, and their retry and discard, each in two steps
 * as a dead-letter replay (a GET shows the dry run and a form; its POST does it, at most `maxBatchSize` rows,
 * and leads to the audit record). Refused with the reason when the app has no outbox.
 */
@Injectable()
export class ConsoleOutboxController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly outbox: OutboxOperations,
    private readonly audit: DeadLetterAudit,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('outbox')
  async list(
    @Req() request: Request,
    @Res() response: Response,
    @Query() source: Record<string, unknown>,
  ): Promise<void> {
    this.requireOutbox();
    const frame = this.console.frame(request);
    const filter = outboxFilterFieldsOf(source);
    const page: OutboxPage = { filter, rows: [], more: false, maxBatchSize: this.options.maxBatchSize };
    try {
      const { all: _all, ...selection } = outboxSelectionOf(outboxSelectionFieldsOf(source));
      const limit = listLimit(filter.limit, this.options.maxBatchSize);
      Object.assign(page, await this.outbox.list(selection, { limit }));
    } catch (error) {
      if (!(error instanceof InvalidDeadLetterQueryError)) throw error;
      page.error = error.message;
    }
    sendHtml(
      response,
      layout(frame, 'Parked outbox rows', 'outbox', outboxView(frame, page)),
      page.error ? 400 : 200,
    );
  }

  @Get('outbox/rows/:id')
  async show(@Req() request: Request, @Res() response: Response, @Param('id') id: string): Promise<void> {
    this.requireOutbox();
    const frame = this.console.frame(request);
    const row = await this.outbox.show(id);
    await auditBodyRead(this.audit, adminActor(request, this.options), {
      outboxRowId: row.id,
      messageId: row.messageId,
    });
    sendHtml(response, layout(frame, `Parked outbox row ${row.id}`, 'outbox', outboxRowView(frame, row)));
  }

  @Get('outbox/retry')
  @OperatorOnly()
  retryPreview(@Req() request: Request, @Res() response: Response, @Query() source: object): Promise<void> {
    return this.preview('retry', request, response, source);
  }

  @Get('outbox/discard')
  @OperatorOnly()
  discardPreview(@Req() request: Request, @Res() response: Response, @Query() source: object): Promise<void> {
    return this.preview('discard', request, response, source);
  }

  @Post('outbox/retry')
  @OperatorOnly()
  retry(@Req() request: ConsoleRequest, @Res() response: Response): Promise<void> {
    return this.run('retry', request, response);
  }

  @Post('outbox/discard')
  @OperatorOnly()
  discard(@Req() request: ConsoleRequest, @Res() response: Response): Promise<void> {
    if (field(request[CONSOLE_FORM], 'confirm') !== 'yes') {
      throw new InvalidDeadLetterQueryError(
        'a discard deletes outbox rows for good: tick the confirmation to discard them; nothing was discarded',
      );
    }
    return this.run('discard', request, response);
  }

  private async preview(action: Action, request: Request, response: Response, source: object): Promise<void> {
    this.requireOutbox();
    const frame = this.console.frame(request);
    const fields = outboxSelectionFieldsOf(source as Record<string, unknown>);
    const result = await this.outbox[action](outboxSelectionOf(fields), {
      actor: adminActor(request, this.options),
      dryRun: true,
      allowEmpty: true,
      limit: this.options.maxBatchSize,
    });
    const title = action === 'retry' ? 'Retry parked outbox rows' : 'Discard parked outbox rows';
    const content = operationPreviewView(
      frame,
      this.copy(action, fields),
      pinnedSelection(fields, result.ids),
      result,
    );
    sendHtml(response, layout(frame, title, 'outbox', content));
  }

  private async run(action: Action, request: ConsoleRequest, response: Response): Promise<void> {
    this.requireOutbox();
    const form = request[CONSOLE_FORM];
    const note = field(form, 'note')?.trim();
    const result = await this.outbox[action](outboxSelectionOf(outboxSelectionFieldsOf(form)), {
      actor: adminActor(request, this.options),
      limit: this.options.maxBatchSize,
      note: note ? note.slice(0, 1000) : undefined,
    });
    redirectTo(response, `${this.console.base}/audit${query({ highlight: result.auditId })}`);
  }

  private copy(action: Action, selection: SelectionFields): OperationCopy {
    const { id: _id, all: _all, ...filter } = selection;
    return {
      path: `outbox/${action}`,
      noun: 'parked outbox row(s)',
      done:
        action === 'retry'
          ? 'put back for the relay, each before the later rows of its ordering key'
          : 'discarded (deleted for good), releasing the later rows of their ordering keys',
      verb: action === 'retry' ? 'Retry' : 'Discard',
      destructive: action === 'discard',
      back: `${this.console.base}/outbox${query(filter)}`,
    };
  }

  private requireOutbox(): void {
    if (this.console.outboxUnavailable) throw new InvalidDeadLetterQueryError(this.console.outboxUnavailable);
  }
}
