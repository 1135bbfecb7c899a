import { Body, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import { DeadLetterMonitor } from 'nestjs-reliable-messaging/operations';
import { DeadLetterOperations } from '../dead-letter/dead-letter-operations.service';
import type { DeadLetterSelection } from '../dead-letter/dead-letter-selection';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { parseDeadLetterFilter, type DeadLetterFilterInput } from '../dead-letter/dead-letter-filter';
import { describeDeadLetter } from '../dead-letter/dead-letter-view';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { adminActor } from './admin-actor';
import { OperatorOnly } from './admin-role';
import { auditBodyRead } from '../audit/body-read-audit';
import { answer, flagOf, limitOf, noteOf, type AdminInput } from './admin-request';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

type Input = AdminInput;

/**
 * The dead-letter admin API: the same operations as the command line, over HTTP. Mounted by
 * `DeadLetterAdminModule.register()` under its `path`, behind its token check or guard. Every request is
 * bounded by `maxBatchSize`; a replay or purge that hits it answers `more: true`, and the caller repeats. A list
 * keeps no bodies (each entry gives `bodyBytes`) and reads at most `maxReadBytesPerRequest`; one that stops there
 * answers `stoppedAtReadBudget: true` with what it found.
 *
 * - `GET    queues`                                    depth and oldest age of each dead-letter queue
 * - `GET    messages?queue&type&errorClass&reason&since&until&text&messageIds&limit`
 * - `GET    messages/:queue/:messageId`                one dead letter in full
 * - `POST   replay   { ...filter, all?, limit?, dryRun?, allowEmpty?, note? }`
 * - `POST   messages/:queue/:messageId/edit   { body, dryRun?, note? }`  edit the body, then replay
 * - `POST   purge    { ...filter, all?, limit?, dryRun?, allowEmpty?, confirm: true, note? }`
 * - `GET    audit?limit`                               the latest audit records
 *
 * A viewer's token may list, show and read the audit; replay, edit and purge need an operator's (else 403).
 * Every show of a message in full is audited as a `read`. A replay or purge that matches nothing answers 404 (and is audited as failed) unless `allowEmpty: true`.
 * The parked outbox rows are served beside it, under `outbox/` (OutboxAdminController).
 */
export class DeadLetterAdminController {
  constructor(
    private readonly operations: DeadLetterOperations,
    private readonly monitor: DeadLetterMonitor,
    private readonly audit: DeadLetterAudit,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('queues')
  async queues(): Promise<unknown> {
    return { queues: await this.monitor.read(this.operations.knownQueues()) };
  }

  @Get('messages')
  async list(@Query() query: Input): Promise<unknown> {
    return this.run(async () => {
      const filter = parseDeadLetterFilter(this.filterInput(query));
      const { deadLetters, ...read } = await this.operations.list(filter, {
        limit: this.limit(query.limit),
        maxReadBytes: this.options.maxReadBytesPerRequest,
      });
      return { deadLetters: deadLetters.map((deadLetter) => describeDeadLetter(deadLetter)), ...read };
    });
  }

  @Get('messages/:queue/:messageId')
  async show(
    @Param('queue') queue: string,
    @Param('messageId') messageId: string,
    @Req() request: object,
  ): Promise<unknown> {
    return this.run(async () => {
      const deadLetter = await this.operations.show(messageId, queue);
      await auditBodyRead(this.audit, this.actor(request), { deadLetterQueue: queue, messageId });
      return describeDeadLetter(deadLetter, true);
    });
  }

  @Post('replay')
  @OperatorOnly()
  @HttpCode(200)
  async replay(@Body() body: Input, @Req() request: object): Promise<unknown> {
    return this.run(() =>
      this.operations.replay(this.selection(body), {
        actor: this.actor(request),
        dryRun: this.flag(body, 'dryRun'),
        limit: this.limit(body.limit),
        note: this.note(body),
        allowEmpty: this.flag(body, 'allowEmpty'),
      }),
    );
  }

  @Post('messages/:queue/:messageId/edit')
  @OperatorOnly()
  @HttpCode(200)
  async edit(
    @Param('queue') queue: string,
    @Param('messageId') messageId: string,
    @Body() body: Input,
    @Req() request: object,
  ): Promise<unknown> {
    return this.run(async () => {
      if (body?.body === undefined)
        throw new InvalidDeadLetterQueryError("give the new message body as 'body' (JSON)");
      const newBody = Buffer.from(encodedBody(body.body), 'utf8');
      const { before, ...result } = await this.operations.editAndReplay(queue, messageId, newBody, {
        actor: this.actor(request),
        dryRun: this.flag(body, 'dryRun'),
        note: this.note(body),
      });
      return { ...result, before: describeDeadLetter(before, true) };
    });
  }

  @Post('purge')
  @OperatorOnly()
  @HttpCode(200)
  async purge(@Body() body: Input, @Req() request: object): Promise<unknown> {
    return this.run(() => {
      const dryRun = this.flag(body, 'dryRun');
      if (!dryRun && body?.confirm !== true) {
        throw new InvalidDeadLetterQueryError(
          "a purge deletes dead letters for good: send 'confirm: true' (or 'dryRun: true' first)",
        );
      }
      return this.operations.purge(this.selection(body), {
        actor: this.actor(request),
        dryRun,
        limit: this.limit(body.limit),
        note: this.note(body),
        allowEmpty: this.flag(body, 'allowEmpty'),
      });
    });
  }

  @Get('audit')
  async recentAudit(@Query('limit') limit?: string): Promise<unknown> {
    return this.run(async () => ({ records: await this.audit.recent(this.limit(limit)) }));
  }

  private selection(body: Input | undefined): DeadLetterSelection {
    const input = body ?? {};
    return { ...parseDeadLetterFilter(this.filterInput(input)), all: this.flag(input, 'all') };
  }

  private filterInput(input: Input): DeadLetterFilterInput {
    const ids = input.messageIds ?? input.messageId;
    return {
      queue: input.queue,
      messageIds: typeof ids === 'string' ? ids.split(',') : ids,
      errorClass: input.errorClass,
      type: input.type,
      reason: input.reason,
      since: input.since,
      until: input.until,
      text: input.text,
    };
  }

  private limit(value: unknown): number {
    return limitOf(value, this.options);
  }

  private flag(input: Input | undefined, name: string): boolean {
    return flagOf(input, name);
  }

  private note(input: Input | undefined): string | undefined {
    return noteOf(input);
  }

  private actor(request: object): string {
    return adminActor(request, this.options);
  }

  private async run<T>(work: () => Promise<T> | T): Promise<T> {
    return answer(work);
  }
}

/**
 * The new body of an edit, as given (a string) or encoded (JSON). NOTE: JSON.stringify recurses once per level
 * and throws a RangeError on a body nested a few thousand deep, which would answer 500: it is the caller's
 * mistake, refused as one.
 */
function encodedBody(body: unknown): string {
  if (typeof body === 'string') return body;
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw new InvalidDeadLetterQueryError(
      `'body' cannot be encoded as JSON (${error instanceof Error ? error.message : String(error)}): is it nested deeper than jsonLimits.maxDepth?`,
    );
  }
}
