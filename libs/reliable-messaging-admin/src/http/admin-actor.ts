import { ADMIN_ACTOR } from './admin-auth.guard';
import type { ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/**
 * Who made an admin request, for the audit trail: the token name the token check or the console's session
 * recorded, else the `actor` option, else the id, username or name of the `request.user` a guard of the app's
 * own set, else `admin-api`.
 */
export function adminActor(request: object, options: Pick<ResolvedDeadLetterAdminOptions, 'actor'>): string {
  const recorded = (request as Record<symbol, unknown>)[ADMIN_ACTOR];
  if (typeof recorded === 'string') return recorded;
  const fromOption = options.actor?.(request);
  if (fromOption) return fromOption;
  const user = (request as { user?: Record<string, unknown> }).user;
  const named = user?.id ?? user?.username ?? user?.name;
  return typeof named === 'string' || typeof named === 'number' ? `user:${named}` : 'admin-api';
}
