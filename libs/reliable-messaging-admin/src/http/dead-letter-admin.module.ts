import {
  Controller,
  Module,
  UseFilters,
  UseGuards,
  type CanActivate,
  type DynamicModule,
  type Type,
} from '@nestjs/common';
import { ReliableMessagingAdminModule } from '../reliable-messaging-admin.module';
import { AdminSessionRevocations } from '../session/admin-session-revocations.service';
import { AdminAuthFailures } from './admin-auth-failures.service';
import { AdminAuthGuard } from './admin-auth.guard';
import { ConsoleAuditController } from './console/console-audit.controller';
import { ConsoleContext } from './console/console-context';
import { ConsoleExceptionFilter } from './console/console-exception.filter';
import { ConsoleFigures } from './console/console-figures';
import { ConsoleMessagesController } from './console/console-messages.controller';
import { ConsoleOperationsController } from './console/console-operations.controller';
import { ConsoleOutboxController } from './console/console-outbox.controller';
import { ConsoleOverviewController } from './console/console-overview.controller';
import { ConsoleSagasController } from './console/console-sagas.controller';
import { ConsoleScheduledController } from './console/console-scheduled.controller';
import { ConsoleSessionController } from './console/console-session.controller';
import { ConsoleGuard } from './console/console.guard';
import { DeadLetterAdminController } from './dead-letter-admin.controller';
import { OutboxAdminController } from './outbox-admin.controller';
import { SagaAdminController } from './saga-admin.controller';
import { ScheduledAdminController } from './scheduled-admin.controller';
import {
  DEAD_LETTER_ADMIN_OPTIONS,
  resolveAdminOptions,
  type DeadLetterAdminOptions,
} from './dead-letter-admin.options';

/** The console's pages, one controller per area, mounted under `<path>/console` when `console` is on. */
const CONSOLE_CONTROLLERS: Array<Type<object>> = [
  ConsoleSessionController,
  ConsoleOverviewController,
  ConsoleMessagesController,
  ConsoleOperationsController,
  ConsoleOutboxController,
  ConsoleScheduledController,
  ConsoleSagasController,
  ConsoleAuditController,
];

/**
 * The opt-in HTTP admin API for dead letters, parked outbox rows, scheduled messages and saga instances (see
 * DeadLetterAdminController, and OutboxAdminController, ScheduledAdminController and SagaAdminController under
 * `<path>/outbox`, `<path>/scheduled` and `<path>/sagas`, for their routes), and, with `console: true`, the operator
 * console, its web pages (see docs/operations.md). Off unless an HTTP app imports it, and never open: it needs
 * bearer tokens, a guard of your own, or both. A token is an operator's (reads and acts) or a viewer's (reads
 * only); wrong tokens are rate-limited per address, logged and audited. Requires
 * `ReliableMessagingModule` (global) in the same app.
 *
 * @example
 * DeadLetterAdminModule.register({
 *   tokens: { ops: process.env.DLQ_ADMIN_TOKEN, support: { token: process.env.DLQ_VIEWER_TOKEN, role: 'viewer' } },
 *   console: true,
 *   consoleSessionSecret: process.env.DLQ_CONSOLE_SECRET,
 * })
 */
@Module({})
export class DeadLetterAdminModule {
  static register(options: DeadLetterAdminOptions): DynamicModule {
    const resolved = resolveAdminOptions(options);
    const ownGuards: Array<Type<CanActivate>> = resolved.guard ? [resolved.guard] : [];
    const apiGuards = [AdminAuthGuard, ...ownGuards];
    const controllers = [
      mount(DeadLetterAdminController, resolved.path, apiGuards),
      mount(OutboxAdminController, `${resolved.path}/outbox`, apiGuards),
      mount(ScheduledAdminController, `${resolved.path}/scheduled`, apiGuards),
      mount(SagaAdminController, `${resolved.path}/sagas`, apiGuards),
    ];
    if (resolved.console) {
      for (const controller of CONSOLE_CONTROLLERS) {
        controllers.push(
          mount(controller, `${resolved.path}/console`, [ConsoleGuard, ...ownGuards], ConsoleExceptionFilter),
        );
      }
    }
    return {
      module: DeadLetterAdminModule,
      imports: [ReliableMessagingAdminModule],
      controllers,
      providers: [
        { provide: DEAD_LETTER_ADMIN_OPTIONS, useValue: resolved },
        AdminAuthGuard,
        AdminAuthFailures,
        ...ownGuards,
        ...(resolved.console
          ? [ConsoleContext, ConsoleGuard, ConsoleFigures, ConsoleExceptionFilter, AdminSessionRevocations]
          : []),
      ],
    };
  }
}

/**
 * A controller class mounted under `path`, behind `guards`.
 *
 * NOTE: the path is an option, and Nest reads a controller's path from its class decorator, so each
 * registration mounts a subclass decorated with its own path.
 */
function mount(
  base: Type<object>,
  path: string,
  guards: Array<Type<CanActivate>>,
  filter?: Type<object>,
): Type<object> {
  @Controller(path)
  @UseGuards(...guards)
  @UseFilters(...(filter ? [filter] : []))
  class Mounted extends base {}
  Object.defineProperty(Mounted, 'name', { value: `Mounted${base.name}` });
  return Mounted;
}
