import { Get, Inject, Param, Query, Req } from '@nestjs/common';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { auditBodyRead } from '../audit/body-read-audit';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { SagaOperations } from '../saga/saga-operations.service';
import { adminActor } from './admin-actor';
import { answer, limitOf, type AdminInput } from './admin-request';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/**
 * Saga instances over HTTP, the same reads as `dlq sagas`. Mounted by `DeadLetterAdminModule.register()` under
 * `<path>/sagas`, behind the same token check or guard and bounded by the same `maxBatchSize`. Read-only.
 *
 * - `GET sagas/:saga/instances?status&after&limit`   instances in correlation-key order; `next` pages on
 * - `GET sagas/:saga/instances/:correlationKey?history`   one instance: state (JSON text, cut past 16 KiB),
 *   version, status, history newest first, pending timeouts
 *
 * A show is audited as a `read`: a state may hold personal data.
 */
export class SagaAdminController {
  constructor(
    private readonly sagas: SagaOperations,
    private readonly audit: DeadLetterAudit,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get(':saga/instances')
  async list(@Param('saga') saga: string, @Query() query: AdminInput): Promise<unknown> {
    return answer(() =>
      this.sagas.list(saga, {
        status: textOf(query, 'status'),
        after: textOf(query, 'after'),
        limit: limitOf(query.limit, this.options),
      }),
    );
  }

  @Get(':saga/instances/:correlationKey')
  async show(
    @Param('saga') saga: string,
    @Param('correlationKey') correlationKey: string,
    @Query() query: AdminInput,
    @Req() request: object,
  ): Promise<unknown> {
    return answer(async () => {
      const history = textOf(query, 'history');
      const instance = await this.sagas.show(saga, correlationKey, {
        historyLimit: history === undefined ? undefined : Number(history),
      });
      await auditBodyRead(this.audit, adminActor(request, this.options), { sagaName: saga, correlationKey });
      return instance;
    });
  }
}

function textOf(query: AdminInput, name: string): string | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string')
    throw new InvalidDeadLetterQueryError(`'${name}' must be given once, as text`);
  return value;
}
