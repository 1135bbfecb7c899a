import { HttpException, HttpStatus, Inject, Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { errorMessage } from 'nestjs-reliable-messaging/operations';
import { DeadLetterAudit } from '../audit/dead-letter-audit.service';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { clientAddress } from './client-address';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/** What was refused: a bearer token of the API, or a token typed into the console's sign-in form. */
export type AuthFailureKind = 'token-refused' | 'sign-in-failed';

/**
 * What the admin API does with a wrong token: counts it against the caller's address (`authFailureLimit`), logs
 * it and writes it to the audit trail, never with the token itself. An address over its limit is held off with
 * 429 before its token is even compared, so guessing gets no answer while it lasts.
 */
@Injectable()
export class AdminAuthFailures {
  private readonly logger = new Logger('DeadLetterAdmin');
  private readonly limiter: AuthFailureLimiter;

  constructor(
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) options: ResolvedDeadLetterAdminOptions,
    private readonly audit: DeadLetterAudit,
  ) {
    this.limiter = new AuthFailureLimiter(
      options.authFailureLimit.failures,
      options.authFailureLimit.windowMs,
    );
  }

  /** Throws 429, with Retry-After set on `response`, when the request's address used up its refusals. */
  holdOff(request: Request, response: Response): void {
    const seconds = this.limiter.retryAfterSeconds(clientAddress(request));
    if (seconds === undefined) return;
    response.setHeader('Retry-After', String(seconds));
    throw new HttpException(
      `too many refused tokens from this address: try again in ${seconds} seconds`,
      HttpStatus.TOO_MANY_REQUESTS,
    );
  }

  /** Counts, logs and audits a refused token. An audit that cannot be written is logged; the refusal stands. */
  async refused(kind: AuthFailureKind, request: Request): Promise<void> {
    const address = clientAddress(request);
    this.limiter.refused(address);
    const what = kind === 'token-refused' ? 'a bearer token' : 'a console sign-in';
    this.logger.warn(`refused ${what} from ${address} (${request.method} ${request.path})`);
    try {
      await this.audit.note({
        action: kind,
        actor: `address:${address}`,
        selection: { address },
        details: { method: request.method, path: request.path },
        outcome: 'failed',
      });
    } catch (error) {
      this.logger.error(`could not audit the refusal of ${what} from ${address}: ${errorMessage(error)}`);
    }
  }
}
