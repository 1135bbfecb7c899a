import { createHash, timingSafeEqual } from 'node:crypto';
import {
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { AdminAuthFailures } from './admin-auth-failures.service';
import { ADMIN_ROLE, requireRoleFor, type AdminRole } from './admin-role';
import { DEAD_LETTER_ADMIN_OPTIONS, type ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/** The request property the guard records the caller's name in, for the audit trail. */
export const ADMIN_ACTOR = Symbol('rm-admin-actor');

/** Who a configured token belongs to, and what it may do. */
export interface AdminIdentity {
  name: string;
  role: AdminRole;
}

/**
 * Lets a request to the dead-letter admin API in when it carries one of the configured bearer tokens, and
 * refuses a viewer's token on a route that acts (403). Tokens are compared as SHA-256 digests with
 * `timingSafeEqual`, every configured token each time, so neither a token's content nor its length leaks
 * through response timing. A wrong token is counted against the caller's address, logged and audited; an
 * address with too many gets 429. Without configured tokens it lets every request through to the user's own
 * guard.
 */
@Injectable()
export class AdminAuthGuard implements CanActivate {
  private readonly digests: Array<AdminIdentity & { digest: Buffer }>;

  constructor(
    @Inject(DEAD_LETTER_ADMIN_OPTIONS) options: ResolvedDeadLetterAdminOptions,
    private readonly reflector: Reflector,
    private readonly failures: AdminAuthFailures,
  ) {
    this.digests = options.tokens.map(({ name, role, token }) => ({ name, role, digest: sha256(token) }));
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.digests.length === 0) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new UnauthorizedException('a bearer token is required (Authorization: Bearer <token>)');
    this.failures.holdOff(request, http.getResponse<Response>());
    const identity = this.identify(match[1]);
    if (identity === undefined) {
      await this.failures.refused('token-refused', request);
      throw new UnauthorizedException('the bearer token is not valid');
    }
    const recorded = request as unknown as Record<symbol, unknown>;
    recorded[ADMIN_ACTOR] = `token:${identity.name}`;
    recorded[ADMIN_ROLE] = identity.role;
    requireRoleFor(context, this.reflector, identity.role);
    return true;
  }

  /** Who the configured token `token` belongs to, or undefined; the console's sign-in checks tokens here too. */
  identify(token: string): AdminIdentity | undefined {
    const given = sha256(token);
    let identity: AdminIdentity | undefined;
    for (const candidate of this.digests) {
      if (timingSafeEqual(given, candidate.digest) && identity === undefined) {
        identity = { name: candidate.name, role: candidate.role };
      }
    }
    return identity;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
