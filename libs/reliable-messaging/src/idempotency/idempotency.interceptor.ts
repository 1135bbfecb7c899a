import {
  BadRequestException,
  type CallHandler,
  ConflictException,
  type ExecutionContext,
  Injectable,
  Logger,
  type NestInterceptor,
  type OnApplicationBootstrap,
  UnprocessableEntityException,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { defer, lastValueFrom, type Observable } from 'rxjs';
import type { EntityManager } from 'typeorm';
import { TransactionContext } from '../database/transaction-context.service';
import { IdempotencyKeyInFlightError } from '../errors/idempotency-key-in-flight.error';
import { IDEMPOTENT_METADATA, IDEMPOTENT_REPLAYED_HEADER } from '../reliable-messaging.constants';
import type { IdempotentOptions } from './idempotency.options';
import { readIdempotencyKey } from './idempotency-key-header';
import { IdempotencyStore, type IdempotentRequest } from './idempotency-store.service';
import { requestFingerprint } from './request-fingerprint';

type HttpRequest = IncomingMessage & { body?: unknown; originalUrl?: string };

/**
 * The interceptor behind `@Idempotent()`. With an `Idempotency-Key` header it opens the route's transaction
 * itself, through the messaging module's TransactionContext: nestjs-cls' `Propagation.Required`, so the
 * handler's `@Transactional()` services (and the outbox they publish to) join it. In it, it claims the key's row
 * first, runs the handler, stores the response and commits: the order, its event and its key commit together or
 * not at all. A handler that throws rolls the claim back with everything else, so a retry may succeed.
 *
 * Answers: 400 for a malformed key (or none on a `required` route), 422 when the key came with another request,
 * 409 when a request with the key is still in flight after `lockTimeoutMs`, else the handler's response, or the
 * stored one with `Idempotent-Replayed: true`.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor, OnApplicationBootstrap {
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly store: IdempotencyStore,
    private readonly transactions: TransactionContext,
    private readonly reflector: Reflector,
  ) {}

  onApplicationBootstrap(): void {
    if (this.transactions.usesCls) return;
    this.logger.warn(
      "@Idempotent() routes run in a transaction of the module's DataSource that nestjs-cls does not propagate: " +
        "the handler's writes do not join the key's transaction. Register ClsPluginTransactional with the " +
        'TypeORM adapter on that DataSource (see docs/http-idempotency.md)',
    );
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequest>();
    const response = http.getResponse<ServerResponse>();
    const options =
      this.reflector.get<IdempotentOptions | undefined>(IDEMPOTENT_METADATA, context.getHandler()) ?? {};
    const reading = readIdempotencyKey(request.headersDistinct['idempotency-key']);
    if (reading.kind === 'invalid') throw new BadRequestException([reading.problem]);
    if (reading.kind === 'absent') {
      if (options.required) throw new BadRequestException(['Idempotency-Key header is required']);
      return next.handle();
    }
    const method = request.method ?? 'GET';
    const path = request.originalUrl ?? request.url ?? '/';
    const idempotent: IdempotentRequest = {
      scope: options.scope ?? `${context.getClass().name}.${context.getHandler().name}`,
      key: reading.key,
      method,
      path,
      fingerprint: requestFingerprint({ method, path, body: request.body }),
    };
    const status =
      this.reflector.get<number | undefined>(HTTP_CODE_METADATA, context.getHandler()) ??
      (method === 'POST' ? 201 : 200);
    return defer(() => this.handle(idempotent, status, next, response));
  }

  private async handle(
    request: IdempotentRequest,
    status: number,
    next: CallHandler,
    response: ServerResponse,
  ): Promise<unknown> {
    try {
      return await this.inTransaction(async (manager) => {
        const claim = await this.store.claim(manager, request);
        if (claim.outcome === 'mismatch') {
          throw new UnprocessableEntityException([
            `Idempotency-Key was used for a different request (${claim.storedMethod} ${claim.storedPath} ` +
              'with another body); send a new key for a new request',
          ]);
        }
        if (claim.outcome === 'replay') {
          response.statusCode = claim.status;
          response.setHeader(IDEMPOTENT_REPLAYED_HEADER, 'true');
          return claim.body;
        }
        // NOTE: next.handle() binds the handler to the async context it is called in (Nest's interceptors
        // consumer), so it must be called here, inside the transaction's nestjs-cls context.
        const body: unknown = await lastValueFrom(next.handle() as Observable<unknown>, {
          defaultValue: undefined,
        });
        await this.store.complete(manager, request, status, body);
        return body;
      });
    } catch (error) {
      if (error instanceof IdempotencyKeyInFlightError) {
        throw new ConflictException([
          'a request with this Idempotency-Key is still in progress; retry it later to get its response',
        ]);
      }
      throw error;
    }
  }

  private inTransaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (!this.transactions.usesCls) return this.store.dataSource().transaction(work);
    return this.transactions.runInCurrentOrNewTransaction(async () => {
      const manager = await this.transactions.currentManager();
      if (!manager) throw new Error('nestjs-cls opened no transaction for the idempotency key');
      return work(manager);
    });
  }
}
