import { Get, Inject, Injectable, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { errorMessage } from 'nestjs-reliable-messaging/operations';
import { DeadLetterOperations } from '../../dead-letter/dead-letter-operations.service';
import { describeDeadLetter } from '../../dead-letter/dead-letter-view';
import { DeadLetterAudit } from '../../audit/dead-letter-audit.service';
import { adminActor } from '../admin-actor';
import { OperatorOnly } from '../admin-role';
import { auditBodyRead } from '../../audit/body-read-audit';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';
import { ConsoleContext } from './console-context';
import { CONSOLE_FORM, field, redirectTo, sendHtml, type ConsoleRequest } from './console-http';
import { filterFieldsOf, listLimit, selectionOf } from './console-selection';
import { query } from './views/format';
import { layout } from './views/layout.view';
import { bodyText, editView, messageView } from './views/message.view';
import { messagesView } from './views/messages.view';

/** The dead letters: the filtered list, one message in full, and the edit of its body. */
@Injectable()
export class ConsoleMessagesController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly operations: DeadLetterOperations,
    private readonly audit: DeadLetterAudit,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('messages')
  async list(
    @Req() request: Request,
    @Res() response: Response,
    @Query() source: Record<string, unknown>,
  ): Promise<void> {
    const frame = this.console.frame(request);
    const filter = filterFieldsOf(source);
    const page = {
      queues: this.operations.knownQueues(),
      filter,
      deadLetters: [] as Awaited<ReturnType<DeadLetterOperations['list']>>['deadLetters'],
      scanned: 0,
      more: false,
      stoppedAtReadBudget: false,
      maxBatchSize: this.options.maxBatchSize,
      maxReadBytes: this.options.maxReadBytesPerRequest,
      error: undefined as string | undefined,
    };
    try {
      const { all: _all, ...selection } = selectionOf(filter);
      const limit = listLimit(filter.limit, this.options.maxBatchSize);
      const { deadLetters, scanned, more, stoppedAtReadBudget } = await this.operations.list(selection, {
        limit,
        maxReadBytes: this.options.maxReadBytesPerRequest,
      });
      Object.assign(page, { deadLetters, scanned, more, stoppedAtReadBudget });
    } catch (error) {
      if (!(error instanceof InvalidDeadLetterQueryError)) throw error;
      page.error = error.message;
    }
    sendHtml(
      response,
      layout(frame, 'Dead letters', 'messages', messagesView(frame, page)),
      page.error ? 400 : 200,
    );
  }

  @Get('messages/:queue/:messageId')
  async show(
    @Req() request: Request,
    @Res() response: Response,
    @Param('queue') queue: string,
    @Param('messageId') messageId: string,
  ): Promise<void> {
    const frame = this.console.frame(request);
    const deadLetter = await this.operations.show(messageId, queue);
    await auditBodyRead(this.audit, adminActor(request, this.options), { deadLetterQueue: queue, messageId });
    sendHtml(response, layout(frame, `Dead letter ${messageId}`, 'messages', messageView(frame, deadLetter)));
  }

  @Get('messages/:queue/:messageId/edit')
  @OperatorOnly()
  async editPage(
    @Req() request: Request,
    @Res() response: Response,
    @Param('queue') queue: string,
    @Param('messageId') messageId: string,
  ): Promise<void> {
    const frame = this.console.frame(request);
    const deadLetter = await this.operations.show(messageId, queue);
    await auditBodyRead(this.audit, adminActor(request, this.options), { deadLetterQueue: queue, messageId });
    const body = bodyText(describeDeadLetter(deadLetter, true));
    sendHtml(response, layout(frame, `Edit ${messageId}`, 'messages', editView(frame, deadLetter, body, '')));
  }

  /**
   * Checks the edited body as the consumer would (a dry run of the edit), and, for `action=replay`, replays
   * it; a body the check refuses is shown again with the reason, and nothing is replayed.
   */
  @Post('messages/:queue/:messageId/edit')
  @OperatorOnly()
  async edit(
    @Req() request: ConsoleRequest,
    @Res() response: Response,
    @Param('queue') queue: string,
    @Param('messageId') messageId: string,
  ): Promise<void> {
    const frame = this.console.frame(request);
    const form = request[CONSOLE_FORM];
    const body = field(form, 'body') ?? '';
    const note = field(form, 'note') ?? '';
    const replay = field(form, 'action') === 'replay';
    const page = (deadLetter: Parameters<typeof editView>[1], outcome: Parameters<typeof editView>[4]) =>
      layout(frame, `Edit ${messageId}`, 'messages', editView(frame, deadLetter, body, note, outcome));
    try {
      const result = await this.operations.editAndReplay(queue, messageId, Buffer.from(body, 'utf8'), {
        actor: adminActor(request, this.options),
        dryRun: !replay,
        note: note.trim() === '' ? undefined : note.slice(0, 1000),
      });
      if (replay)
        return redirectTo(response, `${this.console.base}/audit${query({ highlight: result.auditId })}`);
      sendHtml(
        response,
        page(result.before, { kind: 'ok', text: 'The body is valid: its consumer accepts it.' }),
      );
    } catch (error) {
      if (!(error instanceof InvalidDeadLetterQueryError)) throw error;
      const deadLetter = await this.operations.show(messageId, queue);
      sendHtml(response, page(deadLetter, { kind: 'error', text: errorMessage(error) }), 422);
    }
  }
}
