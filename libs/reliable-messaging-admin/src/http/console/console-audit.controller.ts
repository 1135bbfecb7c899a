import { Get, Injectable, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DeadLetterAudit } from '../../audit/dead-letter-audit.service';
import { ConsoleContext } from './console-context';
import { sendHtml } from './console-http';
import { auditView } from './views/audit.view';
import { layout } from './views/layout.view';

/** The most audit records the page shows. */
const AUDIT_PAGE = 200;

/** The audit log: every replay, edit and purge of dead letters, and every retry and discard of parked outbox rows, newest first. */
@Injectable()
export class ConsoleAuditController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly audit: DeadLetterAudit,
  ) {}

  @Get('audit')
  async log(
    @Req() request: Request,
    @Res() response: Response,
    @Query('highlight') highlight?: string,
  ): Promise<void> {
    const frame = this.console.frame(request);
    const records = await this.audit.recent(AUDIT_PAGE);
    sendHtml(
      response,
      layout(
        frame,
        'Audit log',
        'audit',
        auditView(frame, records, typeof highlight === 'string' ? highlight : undefined),
      ),
    );
  }
}
