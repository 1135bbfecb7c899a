import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { IDEMPOTENT_METADATA } from '../reliable-messaging.constants';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import type { IdempotentOptions } from './idempotency.options';

/**
 * Makes an HTTP route handler idempotent on the `Idempotency-Key` request header: the key, the request's
 * fingerprint and the response commit in one transaction with the handler's own writes, so a retry with the same
 * key and body gets the stored response (header `Idempotent-Replayed: true`) instead of running the handler again.
 * Needs `IdempotencyModule` imported; see docs/http-idempotency.md.
 */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator {
  return applyDecorators(SetMetadata(IDEMPOTENT_METADATA, options), UseInterceptors(IdempotencyInterceptor));
}
