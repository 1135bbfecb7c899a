import { Inject, Injectable } from '@nestjs/common';
import {
  RESOLVED_MESSAGING_OPTIONS,
  type ResolvedMessagingOptions,
} from 'nestjs-reliable-messaging/operations';
import { ADMIN_SESSION_REVOCATION_TABLE } from './admin-session-table';

/**
 * The console sessions signed out before they expired. A session cookie is signed, not stored, so signing out
 * can only work by remembering which session ids may no longer sign in until their cookie lapses: in the
 * `rm_admin_session_revocation` table when the module has a DataSource, which every replica reads, else in
 * this process only (a single replica).
 */
@Injectable()
export class AdminSessionRevocations {
  private readonly local = new Map<string, number>();

  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /** Whether every replica sees a revocation (there is a DataSource), or only this process. */
  get shared(): boolean {
    return this.options.dataSource !== undefined;
  }

  /** Refuses session `id` from now until `expiresAt` (epoch milliseconds), and forgets sessions that lapsed. */
  async revoke(id: string, expiresAt: number): Promise<void> {
    const dataSource = this.options.dataSource;
    if (!dataSource) {
      const now = Date.now();
      for (const [known, until] of this.local) if (until <= now) this.local.delete(known);
      this.local.set(id, expiresAt);
      return;
    }
    await dataSource.query(
      `INSERT INTO "${ADMIN_SESSION_REVOCATION_TABLE}" ("session_id", "expires_at") VALUES ($1, $2) ` +
        `ON CONFLICT ("session_id") DO NOTHING`,
      [id, new Date(expiresAt)],
    );
    await dataSource.query(`DELETE FROM "${ADMIN_SESSION_REVOCATION_TABLE}" WHERE "expires_at" < now()`);
  }

  /** Whether session `id` was signed out. */
  async isRevoked(id: string): Promise<boolean> {
    const dataSource = this.options.dataSource;
    if (!dataSource) return this.local.has(id);
    const rows = await dataSource.query<unknown[]>(
      `SELECT 1 FROM "${ADMIN_SESSION_REVOCATION_TABLE}" WHERE "session_id" = $1`,
      [id],
    );
    return rows.length > 0;
  }
}
