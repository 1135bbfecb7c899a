import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { DeadLetterNotFoundError } from '../../errors/dead-letter-not-found.error';
import { EmptySelectionError } from '../../errors/empty-selection.error';
import { OutboxRowNotFoundError } from '../../errors/outbox-row-not-found.error';
import { SagaInstanceNotFoundError } from '../../errors/saga-instance-not-found.error';
import { InvalidDeadLetterQueryError } from '../../errors/invalid-dead-letter-query.error';
import { errorMessage } from 'nestjs-reliable-messaging/operations';
import { ConsoleContext } from './console-context';
import { redirectTo, sendHtml } from './console-http';
import { ConsoleSignInRequired } from './console.guard';
import { html } from './html';
import { layout, notice } from './views/layout.view';

/**
 * Answers every console failure with a page that carries the console's headers: the sign-in page for a
 * browser that has not signed in, the message of a refused request (400, 403, 404), or for a failure (500) a
 * plain text and an id under which the log keeps the error: its message may hold the database's or the
 * broker's internals, which are not for the page.
 */
@Catch()
export class ConsoleExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('DeadLetterConsole');

  constructor(private readonly console: ConsoleContext) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    if (response.headersSent) return;
    if (error instanceof ConsoleSignInRequired) return redirectTo(response, `${this.console.base}/sign-in`);
    const status =
      error instanceof HttpException
        ? error.getStatus()
        : error instanceof InvalidDeadLetterQueryError
          ? 400
          : error instanceof DeadLetterNotFoundError ||
              error instanceof OutboxRowNotFoundError ||
              error instanceof SagaInstanceNotFoundError ||
              error instanceof EmptySelectionError
            ? 404
            : 500;
    let text = errorMessage(error);
    if (status === 500) {
      const id = randomUUID();
      this.logger.error(`console ${request.method} failed (error id ${id}): ${text}`);
      text = `Something went wrong on the server; nothing more is shown here. The log has it under error id ${id}.`;
    }
    const frame = this.console.frame(request);
    const content = html`${notice('error', text)}
      <p><a href="${this.console.base}">Back to the overview</a></p>`;
    sendHtml(response, layout(frame, status === 403 ? 'Refused' : 'Could not do that', '', content), status);
  }
}
