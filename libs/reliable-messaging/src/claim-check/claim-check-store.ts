import type { ClaimCheckBodyInfo } from '../options/claim-check.options';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';

/** A body's name in a file or object store: its expiry (epoch seconds, 10 digits, so names sort by it), then its id. */
export const OBJECT_NAME = new RegExp(`^(\\d{10})-(${UUID})$`);
/** A body id as the PostgreSQL store keeps it. */
export const BODY_ID = new RegExp(`^${UUID}$`);

/** The object name of a body in a file or object store. */
export function objectName(info: ClaimCheckBodyInfo): string {
  const seconds = Math.ceil(info.expiresAt.getTime() / 1000);
  return `${String(seconds).padStart(10, '0')}-${info.id}`;
}

/** When an object name says its body expires; undefined for a name the store did not write. */
export function expiryOfName(name: string): Date | undefined {
  const match = OBJECT_NAME.exec(name);
  return match ? new Date(Number(match[1]) * 1000) : undefined;
}

/** When a UUID v7 was made (its first 48 bits are epoch milliseconds). */
export function createdAtOfId(id: string): Date {
  return new Date(parseInt(id.replace(/-/g, '').slice(0, 12), 16));
}
