import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { ReliableMessagingModuleOptions } from './reliable-messaging.options';

export const {
  ConfigurableModuleClass: ReliableMessagingConfigurableModule,
  MODULE_OPTIONS_TOKEN: RELIABLE_MESSAGING_MODULE_OPTIONS,
  OPTIONS_TYPE: RELIABLE_MESSAGING_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: RELIABLE_MESSAGING_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<ReliableMessagingModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

/** Injection token of the resolved, validated options. */
export const RESOLVED_MESSAGING_OPTIONS = Symbol('RESOLVED_MESSAGING_OPTIONS');
