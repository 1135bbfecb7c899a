import {
  ArgumentsHost,
  Catch,
  ConflictException,
  HttpException,
  Logger,
  ServiceUnavailableException,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { isDatabaseUnavailableError } from 'nestjs-reliable-messaging/typeorm';
import type { Request, Response } from 'express';
import { QueryFailedError } from 'typeorm';

/** How long a client is told to wait before trying again while the database is unavailable, in seconds. */
export const RETRY_AFTER_SECONDS = 5;

const UNIQUE_VIOLATION = '23505';

/**
 * The HTTP answers to failures that are not the client's input: the database unavailable is `503` with
 * `Retry-After` (a retry will work), a unique violation is `409`, anything else `500`. Each is logged as one
 * line with the error's class and code and the route, never its message or the query's parameters, which may
 * hold customer data. Nest's own exceptions (validation, 404) pass through unchanged.
 */
@Catch()
export class ErrorResponsesFilter extends BaseExceptionFilter {
  private readonly logger = new Logger('Http');

  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof HttpException || host.getType() !== 'http') {
      super.catch(exception, host);
      return;
    }
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const route = `${request.method} ${request.route ? String((request.route as { path: unknown }).path) : request.path}`;
    const what = describe(exception);
    if (isDatabaseUnavailableError(exception)) {
      this.logger.warn(`${route}: the database is unavailable (${what}); answered 503`);
      response.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      super.catch(new ServiceUnavailableException('the database is unavailable; try again shortly'), host);
      return;
    }
    if (exception instanceof QueryFailedError && codeOf(exception) === UNIQUE_VIOLATION) {
      this.logger.warn(`${route}: conflicts with an existing row (${what}); answered 409`);
      super.catch(new ConflictException('conflicts with an existing record'), host);
      return;
    }
    this.logger.error(`${route}: failed (${what}); answered 500`);
    response.status(500).json({ statusCode: 500, message: 'Internal server error' });
  }
}

/** The error's class and, when it has one, its code (a SQLSTATE, a socket error code). */
function describe(error: unknown): string {
  const name =
    typeof error === 'object' && error !== null
      ? (error.constructor as { name?: string }).name
      : typeof error;
  const code = codeOf(error);
  return code ? `${name} ${code}` : (name ?? 'unknown');
}

function codeOf(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 3; depth++) {
    if (typeof current !== 'object') return undefined;
    const { code } = current as { code?: unknown };
    if (typeof code === 'string') return code;
    current = (current as { driverError?: unknown }).driverError;
  }
  return undefined;
}
