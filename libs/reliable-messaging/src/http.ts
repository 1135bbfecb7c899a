/**
 * Idempotent HTTP commands, imported as `nestjs-reliable-messaging/http`: the `Idempotency-Key` header
 * (draft-ietf-httpapi-idempotency-key-header) on route handlers, kept in the handler's own transaction, so a
 * client retrying a request whose response was lost gets that response instead of a second order. Its own entry
 * point: it is for the HTTP edge of an app, not for its messaging, and the root API stays at 40 symbols.
 */

/** The module to import once (`forRoot()` / `forRootAsync()`), and its options with their defaults. */
export { IdempotencyModule } from './idempotency/idempotency.module';
export {
  type IdempotencyModuleOptions,
  DEFAULT_IDEMPOTENCY_TTL_MS,
  DEFAULT_IDEMPOTENCY_LOCK_TIMEOUT_MS,
  DEFAULT_IDEMPOTENCY_PRUNE_INTERVAL_MS,
} from './idempotency/idempotency.options';
/** Makes a route handler idempotent on the `Idempotency-Key` header. */
export { Idempotent } from './idempotency/idempotent.decorator';
export type { IdempotentOptions } from './idempotency/idempotency.options';
/** Who sent a request: keys are scoped per caller. The default, and the types of an `identifyCaller` option. */
export {
  defaultIdentifyCaller,
  type IdentifyCaller,
  type CallerRequest,
} from './idempotency/caller-identity';
/** The interceptor behind `@Idempotent()`, for `@UseInterceptors()` where a decorator does not fit. */
export { IdempotencyInterceptor } from './idempotency/idempotency.interceptor';
/** Deletes expired keys now (`pruneNow()`), for scripts and tests; it also runs on its own interval. */
export { IdempotencyKeyPruner } from './idempotency/idempotency-key-pruner.service';
/** The request and response header names. */
export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from './reliable-messaging.constants';
/** Reads and checks an `Idempotency-Key` header; the fingerprint a retry must match. */
export {
  readIdempotencyKey,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  type IdempotencyKeyReading,
} from './idempotency/idempotency-key-header';
export { requestFingerprint } from './idempotency/request-fingerprint';
