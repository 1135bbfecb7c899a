import { ForbiddenException, SetMetadata, type ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';

/**
 * What a token may do: a `viewer` lists and shows dead letters, parked rows, the overview and the audit trail;
 * an `operator` also replays, edits, purges, retries, discards and cancels scheduled messages.
 */
export type AdminRole = 'viewer' | 'operator';

/** The roles, for checking options. */
export const ADMIN_ROLES: readonly AdminRole[] = ['viewer', 'operator'];

/** The request property the token check (or the console's session) records the caller's role in. */
export const ADMIN_ROLE = Symbol('rm-admin-role');

const OPERATOR_ONLY = 'rm:admin-operator-only';

/** Marks an admin route that changes something (or shows the form that does): operators only. */
export const OperatorOnly = (): MethodDecorator => SetMetadata(OPERATOR_ONLY, true);

/**
 * Refuses, with 403, a viewer's request to a route marked `OperatorOnly`. A request with no recorded role came
 * in through an app's own guard, which decides on its own who may do what, so it is let through.
 */
export function requireRoleFor(
  context: ExecutionContext,
  reflector: Reflector,
  role: AdminRole | undefined,
): void {
  if (role !== 'viewer') return;
  if (reflector.get<boolean>(OPERATOR_ONLY, context.getHandler()) !== true) return;
  throw new ForbiddenException(
    'this token may only read (role viewer): replay, edit, purge, retry, discard and cancel need an operator token',
  );
}
