import { Get, Injectable, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AdminAuthGuard } from '../admin-auth.guard';
import { ConsoleContext } from './console-context';
import {
  CONSOLE_FORM,
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
 * session cookie carrying the token's name, never the token. Under an app's own guard there is nothing to sign
 * in to, and the sign-in page leads to the overview.
 */
@Injectable()
export class ConsoleSessionController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly tokens: AdminAuthGuard,
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
  signIn(@Req() request: ConsoleRequest, @Res() response: Response): void {
    const token = field(request[CONSOLE_FORM], 'token');
    const name = this.console.usesTokens && token ? this.tokens.nameOf(token) : undefined;
    if (name === undefined) {
      return sendHtml(response, signInView(this.console.frame(request), 'That token is not valid.'), 401);
    }
    this.console.startSession(request, response, name);
    redirectTo(response, this.console.base);
  }

  @Post('sign-out')
  @ConsoleOpenRoute()
  signOut(@Req() request: Request, @Res() response: Response): void {
    this.console.startSession(request, response, null);
    redirectTo(response, `${this.console.base}/sign-in`);
  }
}
