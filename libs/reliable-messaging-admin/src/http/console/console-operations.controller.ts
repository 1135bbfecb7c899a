import { Get, Inject, Injectable, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { DeadLetterOperations } from '../../dead-letter/dead-letter-operations.service';
import { adminActor } from '../admin-actor';
import { OperatorOnly } from '../admin-role';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';
import { ConsoleContext } from './console-context';
import { CONSOLE_FORM, field, redirectTo, sendHtml, type ConsoleRequest } from './console-http';
import { pinnedSelection, selectionFieldsOf, selectionOf } from './console-selection';
import { query } from './views/format';
import { layout } from './views/layout.view';
import { deadLetterCopy, operationPreviewView } from './views/operation.view';

type Action = 'replay' | 'purge';

/**
 * Replay and purge of one dead letter, a selection or every match of a filter, each in two steps: a GET shows
 * the dry run and a form; its POST does it, at most `maxBatchSize` messages, and leads to the audit record.
 */
@Injectable()
export class ConsoleOperationsController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly operations: DeadLetterOperations,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('replay')
  @OperatorOnly()
  replayPreview(@Req() request: Request, @Res() response: Response, @Query() source: object): Promise<void> {
    return this.preview('replay', request, response, source);
  }

  @Get('purge')
  @OperatorOnly()
  purgePreview(@Req() request: Request, @Res() response: Response, @Query() source: object): Promise<void> {
    return this.preview('purge', request, response, source);
  }

  @Post('replay')
  @OperatorOnly()
  replay(@Req() request: ConsoleRequest, @Res() response: Response): Promise<void> {
    return this.run('replay', request, response);
  }

  @Post('purge')
  @OperatorOnly()
  purge(@Req() request: ConsoleRequest, @Res() response: Response): Promise<void> {
    if (field(request[CONSOLE_FORM], 'confirm') !== 'yes') {
      throw new InvalidDeadLetterQueryError(
        'a purge deletes dead letters for good: tick the confirmation to purge them; nothing was purged',
      );
    }
    return this.run('purge', request, response);
  }

  private async preview(action: Action, request: Request, response: Response, source: object): Promise<void> {
    const frame = this.console.frame(request);
    const fields = selectionFieldsOf(source as Record<string, unknown>);
    const result = await this.operations[action](selectionOf(fields), {
      actor: adminActor(request, this.options),
      dryRun: true,
      allowEmpty: true,
      limit: this.options.maxBatchSize,
    });
    const title = action === 'replay' ? 'Replay dead letters' : 'Purge dead letters';
    const content = operationPreviewView(
      frame,
      deadLetterCopy(frame, action, fields),
      pinnedSelection(fields, result.messageIds),
      result,
    );
    sendHtml(response, layout(frame, title, 'messages', content));
  }

  private async run(action: Action, request: ConsoleRequest, response: Response): Promise<void> {
    const form = request[CONSOLE_FORM];
    const note = field(form, 'note')?.trim();
    const result = await this.operations[action](selectionOf(selectionFieldsOf(form)), {
      actor: adminActor(request, this.options),
      limit: this.options.maxBatchSize,
      note: note ? note.slice(0, 1000) : undefined,
    });
    redirectTo(response, `${this.console.base}/audit${query({ highlight: result.auditId })}`);
  }
}
