import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { IDEMPOTENT_METADATA } from '../reliable-messaging.constants';
import { IdempotencyInterceptor } from './idempotency.interceptor';

/** Options of `@Idempotent()`. */
export interface IdempotentOptions {
  /**
   * The namespace of this route's keys: a key used on one scope is unknown to every other. Give two routes one
   * scope to make a key reused across them a 422. Default: `<Controller>.<method>`.
   */
  scope?: string;
  /** Refuse a request without an `Idempotency-Key` header with 400. Default: false (it runs as usual). */
  required?: boolean;
}

/**
 * Makes an HTTP route handler idempotent on the `Idempotency-Key` request header: the key, the request's
 * fingerprint and the response commit in one transaction with the handler's own writes, so a retry with the same
 * key and body gets the stored response (header `Idempotent-Replayed: true`) instead of running the handler again.
 * Needs `IdempotencyModule` imported; see docs/http-idempotency.md.
 */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator {
  return applyDecorators(SetMetadata(IDEMPOTENT_METADATA, options), UseInterceptors(IdempotencyInterceptor));
}
