import { Get, Injectable, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AdminAuthFailures } from '../admin-auth-failures.service';
import { AdminAuthGuard } from '../admin-auth.guard';
import { ConsoleContext } from './console-context';
import {
  CONSOLE_FORM,
  CONSOLE_SESSION,
  field,
  redirectTo,
  sendHtml,
  setConsoleHeaders,
  type ConsoleRequest,
} from './console-http';
import { CONSOLE_CSS } from './console.css';
import { ConsoleOpenRoute } from './console.guard';
import { signInView } from './views/sign-in.view';

/**
 * Sign-in, sign-out and the style sheet. Signing in POSTs one of the admin tokens once; the answer is a new
 * session cookie carrying the token's name, never the token. A wrong token counts against the address's limit
 * and is audited as the API's are. Signing out revokes the session, so its cookie is refused even if kept.
 * Under an app's own guard there is nothing to sign in to, and the sign-in page leads to the overview.
 */
@Injectable()
export class ConsoleSessionController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly tokens: AdminAuthGuard,
    private readonly failures: AdminAuthFailures,
  ) {}

  @Get('assets/console.css')
  @ConsoleOpenRoute()
  stylesheet(@Res() response: Response): void {
    setConsoleHeaders(response);
    response.type('text/css; charset=utf-8').send(CONSOLE_CSS);
  }

  @Get('sign-in')
  @ConsoleOpenRoute()
  signInPage(@Req() request: Request, @Res() response: Response): void {
    if (!this.console.usesTokens) return redirectTo(response, this.console.base);
    sendHtml(response, signInView(this.console.frame(request)));
  }

  @Post('sign-in')
  @ConsoleOpenRoute()
  async signIn(@Req() request: ConsoleRequest, @Res() response: Response): Promise<void> {
    const token = field(request[CONSOLE_FORM], 'token');
    if (this.console.usesTokens && token) this.failures.holdOff(request, response);
    const identity = this.console.usesTokens && token ? this.tokens.identify(token) : undefined;
    if (identity === undefined) {
      if (this.console.usesTokens && token) await this.failures.refused('sign-in-failed', request);
      return sendHtml(response, signInView(this.console.frame(request), 'That token is not valid.'), 401);
    }
    this.console.startSession(request, response, identity.name);
    redirectTo(response, this.console.base);
  }

  @Post('sign-out')
  @ConsoleOpenRoute()
  async signOut(@Req() request: ConsoleRequest, @Res() response: Response): Promise<void> {
    const session = request[CONSOLE_SESSION];
    if (session.name !== null) await this.console.revocations.revoke(session.id, session.expiresAt);
    this.console.startSession(request, response, null);
    redirectTo(response, `${this.console.base}/sign-in`);
  }
}
