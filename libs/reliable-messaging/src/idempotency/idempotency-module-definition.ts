import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { IdempotencyModuleOptions } from './idempotency.options';

export const {
  ConfigurableModuleClass: IdempotencyConfigurableModule,
  MODULE_OPTIONS_TOKEN: IDEMPOTENCY_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<IdempotencyModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

/** Injection token of the resolved, validated idempotency options. */
export const RESOLVED_IDEMPOTENCY_OPTIONS = Symbol('RESOLVED_IDEMPOTENCY_OPTIONS');
