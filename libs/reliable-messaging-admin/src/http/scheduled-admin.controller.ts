import { Body, Get, HttpCode, Inject, Post, Query, Req } from '@nestjs/common';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { parseCancelTarget, parseScheduledFilter } from '../scheduled/scheduled-filter';
import { ScheduledOperations } from '../scheduled/scheduled-operations.service';
import { adminActor } from './admin-actor';
import { OperatorOnly } from './admin-role';
import { answer, flagOf, limitOf, noteOf, type AdminInput } from './admin-request';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/**
 * The scheduled messages over HTTP, the same operations as `dlq scheduled`. Mounted by
 * `DeadLetterAdminModule.register()` under `<path>/scheduled`, behind the same token check or guard and bounded
 * by the same `maxBatchSize`.
 *
 * - `GET  scheduled/rows?type&dueBefore&after&limit`   waiting messages, the first due first; `next` pages on
 * - `POST scheduled/cancel  { messageId | idempotencyKey, dryRun?, allowEmpty?, confirm: true, note? }`
 *
 * A cancel needs an operator's token (a viewer's gets 403) and is audited as `scheduled-cancel`; one that
 * matches nothing answers 404 (audited as failed) unless `allowEmpty: true`.
 */
export class ScheduledAdminController {
  constructor(
    private readonly scheduled: ScheduledOperations,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('rows')
  async list(@Query() query: AdminInput): Promise<unknown> {
    return answer(() =>
      this.scheduled.list(
        parseScheduledFilter({ type: query.type, dueBefore: query.dueBefore, after: query.after }),
        { limit: limitOf(query.limit, this.options) },
      ),
    );
  }

  @Post('cancel')
  @OperatorOnly()
  @HttpCode(200)
  async cancel(@Body() body: AdminInput | undefined, @Req() request: object): Promise<unknown> {
    return answer(() => {
      const input = body ?? {};
      const target = parseCancelTarget({ messageId: input.messageId, idempotencyKey: input.idempotencyKey });
      const dryRun = flagOf(input, 'dryRun');
      if (!dryRun && input.confirm !== true) {
        throw new InvalidDeadLetterQueryError(
          "a cancel deletes scheduled messages for good: send 'confirm: true' (or 'dryRun: true' first)",
        );
      }
      return this.scheduled.cancel(target, {
        actor: adminActor(request, this.options),
        dryRun,
        allowEmpty: flagOf(input, 'allowEmpty'),
        note: noteOf(input),
      });
    });
  }
}
