import {
  ForbiddenException,
  Injectable,
  SetMetadata,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { ADMIN_ACTOR } from '../admin-auth.guard';
import { ADMIN_ROLE, requireRoleFor } from '../admin-role';
import { ConsoleContext } from './console-context';
import {
  CONSOLE_FORM,
  CONSOLE_SESSION,
  readForm,
  setConsoleHeaders,
  type ConsoleRequest,
} from './console-http';
import { CONSOLE_COOKIE, cookieValue, type ConsoleSession } from './console-session';

const OPEN_ROUTE = 'rm:console-open-route';

/** Marks a console route that needs no sign-in (the sign-in page and the style sheet); CSRF is still checked. */
export const ConsoleOpenRoute = (): MethodDecorator => SetMetadata(OPEN_ROUTE, true);

/** Refusal of a console request that has not signed in; the console's filter answers it with the sign-in page. */
export class ConsoleSignInRequired extends UnauthorizedException {
  constructor() {
    super('sign in to the console');
  }
}

/**
 * Guards every console route, in this order: sets the security headers; reads the session cookie (a browser
 * without a valid one gets a new anonymous session); reads the form of a POST and refuses it with 403 unless it
 * carries the session's CSRF token; then, when the console signs in with tokens, refuses a session that has
 * not signed in or has signed out, records its token name as the actor and its role, as the API's token check
 * does, and refuses a viewer's request to a page that acts (403). With a guard of the
 * app's own instead of tokens, that guard, which runs after this one, decides who gets in.
 */
@Injectable()
export class ConsoleGuard implements CanActivate {
  constructor(
    private readonly console: ConsoleContext,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<ConsoleRequest>();
    const response = http.getResponse<Response>();
    setConsoleHeaders(response);
    const session =
      (await this.liveSession(cookieValue(request.headers.cookie, CONSOLE_COOKIE))) ??
      this.console.startSession(request, response, null);
    request[CONSOLE_SESSION] = session;
    request[CONSOLE_FORM] = await readForm(request);
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      if (!this.console.sessions.csrfMatches(session, request[CONSOLE_FORM]._csrf)) {
        throw new ForbiddenException(
          'this form has no valid CSRF token (it is older than your session): reload the page and try again',
        );
      }
    }
    if (this.reflector.get<boolean>(OPEN_ROUTE, context.getHandler()) === true) return true;
    if (!this.console.usesTokens) return true;
    const token = this.console.options.tokens.find(({ name }) => name === session.name);
    if (session.name === null || token === undefined) throw new ConsoleSignInRequired();
    const recorded = request as unknown as Record<symbol, unknown>;
    recorded[ADMIN_ACTOR] = `token:${token.name}`;
    recorded[ADMIN_ROLE] = token.role;
    requireRoleFor(context, this.reflector, token.role);
    return true;
  }

  /** The session a cookie holds, unless it is missing, forged, expired or signed out. */
  private async liveSession(cookie: string | undefined): Promise<ConsoleSession | undefined> {
    const session = this.console.sessions.read(cookie);
    if (session === undefined || session.name === null) return session;
    return (await this.console.revocations.isRevoked(session.id)) ? undefined : session;
  }
}
