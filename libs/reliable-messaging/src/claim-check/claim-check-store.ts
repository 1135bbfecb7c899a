import type { EntityManager } from 'typeorm';

/** What a store keeps beside a body: when it may be deleted, and what it belongs to (for operators). */
export interface ClaimCheckBodyInfo {
  /** The body's own id, a UUID v7 (its creation time is in it). */
  id: string;
  /** The body may be deleted from this instant on. */
  expiresAt: Date;
  /** The message type, for operators browsing the store. */
  messageType: string;
}

/** The size of a store, as the metrics show it. */
export interface ClaimCheckStoreStats {
  bodies: number;
  bytes: number;
  /** When the oldest body still stored was written; undefined when the store is empty. */
  oldestAt?: Date;
}

/**
 * Where claim-checked bodies live. A store hands out references it alone can read back: `locate()` accepts only
 * the references it would write itself (its own scheme, bucket or directory, a well-formed id), so a forged
 * reference never reaches the store. `put()` and `get()` throw ClaimCheckStoreUnavailableError when the store
 * cannot be reached; `get()` resolves undefined for a body that is not there.
 */
export interface ClaimCheckStore {
  /** Names the store in logs and metrics: `postgres`, `filesystem`, `s3`. */
  readonly kind: string;
  /** The reference written to the message's `rm-claim-check` header for a body. */
  referenceFor(info: ClaimCheckBodyInfo): string;
  /** The body's location parsed from a reference, or undefined when the reference is not this store's. */
  locate(reference: string): string | undefined;
  /** Stores a body; `manager` is the outbox's transaction, used by stores that can join it. */
  put(location: string, body: Buffer, info: ClaimCheckBodyInfo, manager?: EntityManager): Promise<void>;
  get(location: string): Promise<Buffer | undefined>;
  /** Deletes a body; nothing happens when it is not there. */
  delete(location: string): Promise<void>;
  /** Deletes up to `limit` bodies whose time to live has passed; resolves with how many went. */
  deleteExpired(limit: number, now?: Date): Promise<number>;
  stats(): Promise<ClaimCheckStoreStats>;
}

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
