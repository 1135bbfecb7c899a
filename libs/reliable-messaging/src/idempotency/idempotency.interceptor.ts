import {
  BadRequestException,
  type CallHandler,
  ConflictException,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type NestInterceptor,
  UnprocessableEntityException,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import type { ServerResponse } from 'node:http';
import { defer, lastValueFrom, type Observable } from 'rxjs';
import type { EntityManager } from 'typeorm';
import { TransactionContext } from '../database/transaction-context.service';
import { IdempotencyKeyInFlightError } from '../errors/idempotency-key-in-flight.error';
import { IDEMPOTENT_METADATA, IDEMPOTENT_REPLAYED_HEADER } from '../reliable-messaging.constants';
import { ANONYMOUS_CALLER, type CallerRequest, storedCaller } from './caller-identity';
import { RESOLVED_IDEMPOTENCY_OPTIONS } from './idempotency-module-definition';
import type { IdempotentOptions, ResolvedIdempotencyOptions } from './idempotency.options';
import { readIdempotencyKey } from './idempotency-key-header';
import { IdempotencyStore, type IdempotentRequest } from './idempotency-store.service';
import { requestFingerprint } from './request-fingerprint';

type HttpRequest = CallerRequest & { body?: unknown; originalUrl?: string };

/**
 * The interceptor behind `@Idempotent()`. With an `Idempotency-Key` header it opens the route's transaction
 * itself, through the messaging module's TransactionContext: nestjs-cls' `Propagation.Required`, so the
 * handler's `@Transactional()` services (and the outbox they publish to) join it. In it, it claims the key's row
 * first, runs the handler, stores the response and commits: the order, its event and its key commit together or
 * not at all. A handler that throws rolls the claim back with everything else, so a retry may succeed.
 *
 * Keys are scoped per route (`scope`) and per caller (the module's `identifyCaller`, stored hashed): another
 * caller's request with the same key is a request of its own, never a replay or a 422.
 *
 * Answers: 400 for a malformed key (or none on a `required` route), 422 when the key came with another request,
 * 409 when a request with the key is still in flight after `lockTimeoutMs`, else the handler's response, or the
 * stored one with `Idempotent-Replayed: true`. Startup fails without nestjs-cls' transactional plugin (see
 * IdempotencyStore), so the handler's writes always join the key's transaction.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');
  private warnedAnonymous = false;

  constructor(
    @Inject(RESOLVED_IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly store: IdempotencyStore,
    private readonly transactions: TransactionContext,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequest>();
    const response = http.getResponse<ServerResponse>();
    const route =
      this.reflector.get<IdempotentOptions | undefined>(IDEMPOTENT_METADATA, context.getHandler()) ?? {};
    const reading = readIdempotencyKey(request.headersDistinct['idempotency-key']);
    if (reading.kind === 'invalid') throw new BadRequestException([reading.problem]);
    if (reading.kind === 'absent') {
      if (route.required) throw new BadRequestException(['Idempotency-Key header is required']);
      return next.handle();
    }
    const method = request.method ?? 'GET';
    const path = request.originalUrl ?? request.url ?? '/';
    const scope = route.scope ?? `${context.getClass().name}.${context.getHandler().name}`;
    const caller = storedCaller(this.options.identifyCaller(request));
    if (caller === ANONYMOUS_CALLER) this.warnAnonymousOnce(scope);
    const idempotent: IdempotentRequest = {
      scope,
      caller,
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

  /**
   * Says once per process that keys are shared by callers without an identity: right for an API without
   * authentication, a leak between clients where the app authenticates in a way identifyCaller does not see.
   */
  private warnAnonymousOnce(scope: string): void {
    if (this.warnedAnonymous) return;
    this.warnedAnonymous = true;
    this.logger.warn(
      `An Idempotency-Key request to ${scope} came without a caller identity (no request.user with sub, id or ` +
        'userId, no Authorization header): its key is shared by every such caller. If the app authenticates ' +
        'its clients, give IdempotencyModule an identifyCaller option that returns their id',
    );
  }

  private inTransaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.transactions.runInCurrentOrNewTransaction(async () => {
      const manager = await this.transactions.currentManager();
      if (!manager) throw new Error('nestjs-cls opened no transaction for the idempotency key');
      return work(manager);
    });
  }
}
