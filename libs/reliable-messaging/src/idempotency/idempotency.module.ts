import { Module } from '@nestjs/common';
import {
  IDEMPOTENCY_MODULE_OPTIONS,
  IdempotencyConfigurableModule,
  RESOLVED_IDEMPOTENCY_OPTIONS,
} from './idempotency-module-definition';
import { resolveIdempotencyOptions, type IdempotencyModuleOptions } from './idempotency.options';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyKeyPruner } from './idempotency-key-pruner.service';
import { IdempotencyStore } from './idempotency-store.service';

/**
 * Idempotent HTTP commands: import once with `forRoot()` / `forRootAsync()` (global by default), beside
 * `ReliableMessagingModule` with a `dataSource`, and put `@Idempotent()` on route handlers. Keys live in
 * `rm_idempotency_keys` (in `RELIABLE_MESSAGING_MIGRATIONS`).
 */
@Module({
  providers: [
    {
      provide: RESOLVED_IDEMPOTENCY_OPTIONS,
      useFactory: (options: IdempotencyModuleOptions) => resolveIdempotencyOptions(options),
      inject: [IDEMPOTENCY_MODULE_OPTIONS],
    },
    IdempotencyStore,
    IdempotencyKeyPruner,
    IdempotencyInterceptor,
  ],
  exports: [IdempotencyStore, IdempotencyKeyPruner, IdempotencyInterceptor, RESOLVED_IDEMPOTENCY_OPTIONS],
})
export class IdempotencyModule extends IdempotencyConfigurableModule {}
