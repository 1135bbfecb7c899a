import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
} from 'nestjs-reliable-messaging/operations';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from '../dead-letter-admin.options';
import { ADMIN_ACTOR } from '../admin-auth.guard';
import { CONSOLE_SESSION } from './console-http';
import { AdminSessionRevocations } from '../../session/admin-session-revocations.service';
import { ADMIN_ROLE, type AdminRole } from '../admin-role';
import { ConsoleSessions, sessionCookie, sessionKeyOf, type ConsoleSession } from './console-session';
import type { PageFrame } from './views/layout.view';

/** The console's mount point and sessions, shared by its guard, filter and controllers. */
@Injectable()
export class ConsoleContext implements OnApplicationBootstrap {
  /** The console's URL path, `/<path>/console`. */
  readonly base: string;
  readonly sessions: ConsoleSessions;

  /** Why the parked outbox rows cannot be shown, or undefined when the app has an outbox. */
  readonly outboxUnavailable?: string;

  /** Why scheduled messages and saga instances cannot be shown, or undefined when the app has a database. */
  readonly databaseUnavailable?: string;

  constructor(
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) readonly options: ResolvedDeadLetterAdminOptions,
    @Inject(RESOLVED_MESSAGING_OPTIONS) messaging: ResolvedMessagingOptions,
    /** The sessions signed out before they expired. */
    readonly revocations: AdminSessionRevocations,
  ) {
    this.base = `/${options.path}/console`;
    this.sessions = new ConsoleSessions(
      options.consoleSessionTtlMs,
      sessionKeyOf(options.consoleSessionSecret),
    );
    if (!messaging.dataSource) {
      this.outboxUnavailable = 'this app has no outbox: ReliableMessagingModule has no dataSource option';
      this.databaseUnavailable =
        'this app has no scheduled messages or sagas: ReliableMessagingModule has no dataSource option';
    }
  }

  onApplicationBootstrap(): void {
    if (this.options.consoleSessionSecret !== undefined && !this.revocations.shared) {
      new Logger('DeadLetterConsole').warn(
        'consoleSessionSecret is set but there is no DataSource: a sign-out is refused only by this replica; ' +
          'give ReliableMessagingModule a dataSource (with ADMIN_MIGRATIONS) so that every replica refuses it',
      );
    }
  }

  /** Whether the console signs in with the admin tokens (else the app's own guard authenticates each request). */
  get usesTokens(): boolean {
    return this.options.tokens.length > 0;
  }

  /** A URL under the console: `href('messages', 'q', 'id')` with each segment encoded. */
  href(...segments: string[]): string {
    return [this.base, ...segments.map(encodeURIComponent)].join('/');
  }

  /** Starts a new session (signed in as `name`, or anonymous) and sets its cookie. */
  startSession(request: Request, response: Response, name: string | null): ConsoleSession {
    const { session, cookie } = this.sessions.issue(name);
    response.append(
      'Set-Cookie',
      sessionCookie(cookie, this.base, this.options.consoleSessionTtlMs, request.secure),
    );
    return session;
  }

  /** What a page of this request needs: the console's path, the session's CSRF token, who signed in. */
  frame(request: Request): PageFrame {
    const session = (request as Request & { [CONSOLE_SESSION]?: ConsoleSession })[CONSOLE_SESSION];
    const recorded = request as unknown as Record<symbol, unknown>;
    const actor = recorded[ADMIN_ACTOR];
    return {
      base: this.base,
      csrf: session ? this.sessions.csrfToken(session) : '',
      actor: this.usesTokens && typeof actor === 'string' ? actor : undefined,
      readOnly: (recorded[ADMIN_ROLE] as AdminRole | undefined) === 'viewer',
      unavailable: this.databaseUnavailable
        ? {
            outbox: this.outboxUnavailable,
            scheduled: this.databaseUnavailable,
            sagas: this.databaseUnavailable,
          }
        : {},
    };
  }
}
