import {
  Controller,
  Module,
  UseGuards,
  type CanActivate,
  type DynamicModule,
  type Type,
} from '@nestjs/common';
import { AdminAuthGuard } from './admin-auth.guard';
import { DeadLetterAdminController } from './dead-letter-admin.controller';
import { OutboxAdminController } from './outbox-admin.controller';
import {
  DEAD_LETTER_ADMIN_OPTIONS,
  resolveAdminOptions,
  type DeadLetterAdminOptions,
} from './dead-letter-admin.options';

/**
 * The opt-in HTTP admin API for dead letters and parked outbox rows (see DeadLetterAdminController and
 * OutboxAdminController, under `<path>/outbox`, for their routes). Off unless an HTTP app imports it, and never open: it needs bearer tokens, a guard of your own, or both. Requires
 * `ReliableMessagingModule` (global) in the same app.
 *
 * @example
 * DeadLetterAdminModule.register({ tokens: { ops: process.env.DLQ_ADMIN_TOKEN } })
 */
@Module({})
export class DeadLetterAdminModule {
  static register(options: DeadLetterAdminOptions): DynamicModule {
    const resolved = resolveAdminOptions(options);
    const guards: Array<Type<CanActivate>> = [AdminAuthGuard, ...(resolved.guard ? [resolved.guard] : [])];

    // NOTE: the path is an option, and Nest reads a controller's path from its class decorator, so each
    // registration mounts a subclass decorated with its own path.
    @Controller(resolved.path)
    @UseGuards(...guards)
    class MountedDeadLetterAdminController extends DeadLetterAdminController {}
    @Controller(`${resolved.path}/outbox`)
    @UseGuards(...guards)
    class MountedOutboxAdminController extends OutboxAdminController {}

    return {
      module: DeadLetterAdminModule,
      controllers: [MountedDeadLetterAdminController, MountedOutboxAdminController],
      providers: [
        { provide: DEAD_LETTER_ADMIN_OPTIONS, useValue: resolved },
        AdminAuthGuard,
        ...(resolved.guard ? [resolved.guard] : []),
      ],
    };
  }
}
