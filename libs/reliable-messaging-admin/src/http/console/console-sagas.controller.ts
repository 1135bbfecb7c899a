import { Get, Inject, Injectable, Param, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { auditBodyRead } from '../../audit/body-read-audit';
import { DeadLetterAudit } from '../../audit/dead-letter-audit.service';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { SagaOperations } from '../../saga/saga-operations.service';
import { adminActor } from '../admin-actor';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';
import { ConsoleContext } from './console-context';
import { field, sendHtml } from './console-http';
import { listLimit } from './console-selection';
import { layout } from './views/layout.view';
import { sagaInstanceView, sagasView, type SagaFilterFields, type SagasPage } from './views/sagas.view';

/**
 * Saga instances: those of one saga in correlation-key order, and one instance in full (its state cut past its
 * limit, its history newest first, its pending timeouts). Read-only; showing an instance is audited as a read.
 */
@Injectable()
export class ConsoleSagasController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly sagas: SagaOperations,
    private readonly audit: DeadLetterAudit,
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions,
  ) {}

  @Get('sagas')
  async list(
    @Req() request: Request,
    @Res() response: Response,
    @Query() source: Record<string, unknown>,
  ): Promise<void> {
    this.requireDatabase();
    const frame = this.console.frame(request);
    const filter: SagaFilterFields = {};
    for (const name of ['saga', 'status', 'after', 'limit'] as const) {
      const value = field(source, name)?.trim();
      if (value) filter[name] = value;
    }
    const page: SagasPage = { filter, instances: [], more: false };
    if (filter.saga) {
      try {
        const limit = listLimit(filter.limit, this.options.maxBatchSize);
        Object.assign(
          page,
          await this.sagas.list(filter.saga, { status: filter.status, after: filter.after, limit }),
        );
      } catch (error) {
        if (!(error instanceof InvalidDeadLetterQueryError)) throw error;
        page.error = error.message;
      }
    }
    sendHtml(response, layout(frame, 'Sagas', 'sagas', sagasView(frame, page)), page.error ? 400 : 200);
  }

  @Get('sagas/:saga/instances/:correlationKey')
  async show(
    @Req() request: Request,
    @Res() response: Response,
    @Param('saga') saga: string,
    @Param('correlationKey') correlationKey: string,
  ): Promise<void> {
    this.requireDatabase();
    const frame = this.console.frame(request);
    const instance = await this.sagas.show(saga, correlationKey);
    await auditBodyRead(this.audit, adminActor(request, this.options), { sagaName: saga, correlationKey });
    sendHtml(
      response,
      layout(frame, `Saga instance ${instance.correlationKey}`, 'sagas', sagaInstanceView(frame, instance)),
    );
  }

  private requireDatabase(): void {
    if (this.console.databaseUnavailable) {
      throw new InvalidDeadLetterQueryError(this.console.databaseUnavailable);
    }
  }
}
