import { createHash, timingSafeEqual } from 'node:crypto';
import {
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/** The request property the guard records the caller's name in, for the audit trail. */
export const ADMIN_ACTOR = Symbol('rm-admin-actor');

/**
 * Lets a request to the dead-letter admin API in when it carries one of the configured bearer tokens. Tokens
 * are compared as SHA-256 digests with `timingSafeEqual`, every configured token each time, so neither a
 * token's content nor its length leaks through response timing. Without configured tokens it lets every
 * request through to the user's own guard.
 */
@Injectable()
export class AdminAuthGuard implements CanActivate {
  private readonly digests: Array<{ name: string; digest: Buffer }>;

  constructor(@Inject(DEAD_LETTER_ADMIN_OPTIONS) private readonly options: ResolvedDeadLetterAdminOptions) {
    this.digests = options.tokens.map(({ name, token }) => ({ name, digest: sha256(token) }));
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context
      .switchToHttp()
      .getRequest<Record<string | symbol, unknown> & { headers: Record<string, unknown> }>();
    if (this.digests.length === 0) return true;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new UnauthorizedException('a bearer token is required (Authorization: Bearer <token>)');
    const name = this.nameOf(match[1]);
    if (name === undefined) throw new UnauthorizedException('the bearer token is not valid');
    request[ADMIN_ACTOR] = `token:${name}`;
    return true;
  }

  /** The name of the configured token `token` is, or undefined; the console's sign-in checks tokens here too. */
  nameOf(token: string): string | undefined {
    const given = sha256(token);
    let name: string | undefined;
    for (const candidate of this.digests) {
      if (timingSafeEqual(given, candidate.digest) && name === undefined) name = candidate.name;
    }
    return name;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
