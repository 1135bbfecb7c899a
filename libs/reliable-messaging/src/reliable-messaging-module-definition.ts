import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { ReliableMessagingModuleOptions } from './options/reliable-messaging.options';

export const {
  ConfigurableModuleClass: ReliableMessagingConfigurableModule,
  MODULE_OPTIONS_TOKEN: RELIABLE_MESSAGING_MODULE_OPTIONS,
  OPTIONS_TYPE: RELIABLE_MESSAGING_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: RELIABLE_MESSAGING_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<ReliableMessagingModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
