import { Body, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { parseOutboxFilter, type OutboxFilter } from '../outbox/outbox-filter';
import type { OutboxOperationOptions } from '../outbox/outbox-operation';
import type { OutboxSelection } from '../outbox/outbox-selection';
import { OutboxOperations } from '../outbox/outbox-operations.service';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { adminActor } from './admin-actor';
import { OperatorOnly } from './admin-role';
import { auditBodyRead } from '../audit/body-read-audit';
import { answer, flagOf, limitOf, noteOf, type AdminInput } from './admin-request';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/**
 * The parked outbox rows over HTTP, the same operations as `dlq outbox`. Mounted by
 * `DeadLetterAdminModule.register()` under `<path>/outbox`, behind the same token check or guard and bounded by
 * the same `maxBatchSize`. Filters: `ids` (outbox row ids or message ids; a list, or comma-separated in a
 * query), `type`, `orderingKey`, `since`, `until` (parked at; ISO 8601 or an age such as `2h`), `text`.
 *
 * - `GET    outbox/rows?ids&type&orderingKey&since&until&text&limit`   parked rows, each with `holdingBack`
 * - `GET    outbox/rows/:id`                                          one parked row in full (row id or message id)
 * - `POST   outbox/retry    { ...filter, all?, limit?, dryRun?, allowEmpty?, note? }`
 * - `POST   outbox/discard  { ...filter, all?, limit?, dryRun?, allowEmpty?, confirm: true, note? }`
 *
 * Retry and discard need an operator's token (a viewer's gets 403); a show is audited as a `read`. A retry or
 * discard that matches nothing answers 404 (audited as failed) unless `allowEmpty: true`.
 */
export class OutboxAdminController {
  constructor(
    private readonly outbox: OutboxOperations,
    private readonly audit: DeadLetterAudit,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('rows')
  async list(@Query() query: AdminInput): Promise<unknown> {
    return answer(() => this.outbox.list(this.filter(query), { limit: limitOf(query.limit, this.options) }));
  }

  @Get('rows/:id')
  async show(@Param('id') id: string, @Req() request: object): Promise<unknown> {
    return answer(async () => {
      const row = await this.outbox.show(id);
      await auditBodyRead(this.audit, adminActor(request, this.options), {
        outboxRowId: row.id,
        messageId: row.messageId,
      });
      return row;
    });
  }

  @Post('retry')
  @OperatorOnly()
  @HttpCode(200)
  async retry(@Body() body: AdminInput, @Req() request: object): Promise<unknown> {
    return answer(() => this.outbox.retry(this.selection(body), this.operationOptions(body, request)));
  }

  @Post('discard')
  @OperatorOnly()
  @HttpCode(200)
  async discard(@Body() body: AdminInput, @Req() request: object): Promise<unknown> {
    return answer(() => {
      const options = this.operationOptions(body, request);
      if (!options.dryRun && body?.confirm !== true) {
        throw new InvalidDeadLetterQueryError(
          "a discard deletes outbox rows for good: send 'confirm: true' (or 'dryRun: true' first)",
        );
      }
      return this.outbox.discard(this.selection(body), options);
    });
  }

  private filter(input: AdminInput): OutboxFilter {
    const ids = input.ids ?? input.id;
    return parseOutboxFilter({
      ids: typeof ids === 'string' ? ids.split(',') : ids,
      type: input.type,
      orderingKey: input.orderingKey,
      since: input.since,
      until: input.until,
      text: input.text,
    });
  }

  private selection(body: AdminInput | undefined): OutboxSelection {
    const input = body ?? {};
    return { ...this.filter(input), all: flagOf(input, 'all') };
  }

  private operationOptions(body: AdminInput | undefined, request: object): OutboxOperationOptions {
    return {
      actor: adminActor(request, this.options),
      dryRun: flagOf(body, 'dryRun'),
      allowEmpty: flagOf(body, 'allowEmpty'),
      limit: limitOf(body?.limit, this.options),
      note: noteOf(body),
    };
  }
}
