import type { DataSource, EntityManager } from 'typeorm';
import { databaseOutageEvidence } from '../database/database-errors';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { errorMessage } from '../util/error-text';
import { CLAIM_CHECK_TABLE } from '../database/table-names';
import { BODY_ID, createdAtOfId } from './claim-check-store';
import { sizeMismatch } from './stored-body-size';
import type {
  ClaimCheckBodyInfo,
  ClaimCheckStore,
  ClaimCheckStoreStats,
} from '../options/claim-check.options';

const SCHEME = 'postgres:';

/**
 * Bodies in the module's own database, table `rm_claim_check`: the default when the module has a `dataSource`.
 * A body published through the outbox is written in the outbox row's transaction, so a rollback leaves nothing.
 * References look like `postgres:<uuid>`.
 */
export class PostgresClaimCheckStore implements ClaimCheckStore {
  readonly kind = 'postgres';

  constructor(private readonly dataSource: DataSource) {}

  referenceFor(info: ClaimCheckBodyInfo): string {
    return `${SCHEME}${info.id}`;
  }

  locate(reference: string): string | undefined {
    if (!reference.startsWith(SCHEME)) return undefined;
    const id = reference.slice(SCHEME.length);
    return BODY_ID.test(id) ? id : undefined;
  }

  async put(
    location: string,
    body: Buffer,
    info: ClaimCheckBodyInfo,
    manager?: EntityManager,
  ): Promise<void> {
    await this.run(manager ?? this.dataSource.manager, (target) =>
      target.query(
        `INSERT INTO "${CLAIM_CHECK_TABLE}" (id, body, message_type, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
        [location, body, info.messageType, createdAtOfId(info.id), info.expiresAt],
      ),
    );
  }

  /**
   * Reads the body's size first, in the same statement, and the body only when it is the declared one:
   * `octet_length` of a `bytea` comes from its stored header, without reading the value, so a row of another size
   * is refused and never sent.
   */
  async get(location: string, expectedBytes?: number): Promise<Buffer | undefined> {
    const rows = await this.run(this.dataSource.manager, (target) =>
      target.query<Array<{ bytes: number; body: Buffer | null }>>(
        `SELECT octet_length(body) AS bytes, CASE WHEN $2::int IS NULL OR octet_length(body) = $2::int ` +
          `THEN body END AS body FROM "${CLAIM_CHECK_TABLE}" WHERE id = $1`,
        [location, expectedBytes ?? null],
      ),
    );
    const [row] = rows;
    if (!row) return undefined;
    if (row.body === null) throw sizeMismatch(this.kind, row.bytes, expectedBytes as number);
    return row.body;
  }

  async delete(location: string): Promise<void> {
    await this.run(this.dataSource.manager, (target) =>
      target.query(`DELETE FROM "${CLAIM_CHECK_TABLE}" WHERE id = $1`, [location]),
    );
  }

  async deleteExpired(
    limit: number,
    now = new Date(),
    keep: ReadonlySet<string> = new Set(),
  ): Promise<number> {
    // NOTE: TypeORM's postgres driver answers a DELETE with [rows, affected count].
    const [, count] = await this.dataSource.query<[unknown, number]>(
      `DELETE FROM "${CLAIM_CHECK_TABLE}" WHERE id = ANY(ARRAY(SELECT id FROM "${CLAIM_CHECK_TABLE}" ` +
        `WHERE expires_at <= $1 AND NOT (id = ANY($3::uuid[])) ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [now, limit, [...keep]],
    );
    return count;
  }

  async stats(): Promise<ClaimCheckStoreStats> {
    const [row] = await this.dataSource.query<
      Array<{ bodies: string; bytes: string | null; oldest: Date | null }>
    >(
      `SELECT count(*) AS bodies, sum(octet_length(body)) AS bytes, min(created_at) AS oldest FROM "${CLAIM_CHECK_TABLE}"`,
    );
    return { bodies: Number(row.bodies), bytes: Number(row.bytes ?? 0), oldestAt: row.oldest ?? undefined };
  }

  /** Runs a statement, turning an outage of the database into ClaimCheckStoreUnavailableError. */
  private async run<T>(target: EntityManager, statement: (target: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await statement(target);
    } catch (error) {
      if (databaseOutageEvidence(error) === undefined) throw error;
      throw new ClaimCheckStoreUnavailableError(this.kind, errorMessage(error), { cause: error });
    }
  }
}
