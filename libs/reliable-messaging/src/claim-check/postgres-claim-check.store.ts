import type { DataSource, EntityManager } from 'typeorm';
import { databaseOutageEvidence } from '../database/database-errors';
import { ClaimCheckStoreUnavailableError } from '../errors/claim-check-store-unavailable.error';
import { errorMessage } from '../util/error-text';
import { CLAIM_CHECK_TABLE } from '../database/table-names';
import { BODY_ID, createdAtOfId } from './claim-check-store';
import { sizeMismatch } from './stored-body-size';
import { sleep } from '../util/backoff';
import type {
  ClaimCheckBodyInfo,
  ClaimCheckStore,
  ClaimCheckStoreStats,
} from '../options/claim-check.options';

const SCHEME = 'postgres:';

/**
 * An expired body as `deleteExpired` reads it: its id, and its expiry as PostgreSQL prints it (to the microsecond,
 * which a JavaScript Date would round), to resume after it.
 */
interface ExpiredBody {
  id: string;
  at: string;
}

/**
 * Bodies in the module's own database, table `rm_claim_check`: the default when the module has a `dataSource`.
 * A body published through the outbox is written in the outbox row's transaction, so a rollback leaves nothing.
 * References look like `postgres:<uuid>`.
 */
export class PostgresClaimCheckStore implements ClaimCheckStore {
  readonly kind = 'postgres';

  /**
   * The round of `deleteExpired` calls with this `keep` set: where it has read up to, and when its next batch may
   * start (performance.now()).
   */
  private round?: { keep: ReadonlySet<string>; after?: ExpiredBody; nextBatchAt: number };

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

  /**
   * Reads the expired bodies in expiry order, a page at a time, and deletes those not in `keep` by id. The batches
   * of one round (one `keep` set) resume after the last body the previous one looked at, so each body a dead letter
   * refers to is read once a round, not once a batch. Each batch of a round starts no sooner after the previous
   * one than that one took: the deletes share the database with the app's own writes (each page they touch first
   * after a checkpoint goes whole into the WAL, which the app's commits wait on), so a round takes it at most half
   * the time, as PostgreSQL's `vacuum_cost_delay` paces a vacuum.
   *
   * NOTE: the kept ids once went to PostgreSQL with every batch (`NOT (id = ANY($keep))`): with 10,000 of them, each
   * batch parsed, planned and hashed the 10,000 ids and walked past every kept body ahead of it again, 3 to 4 times
   * the CPU of the delete itself, on the database that publishers write to (the scale suite's claim-check case).
   */
  async deleteExpired(
    limit: number,
    now = new Date(),
    keep: ReadonlySet<string> = new Set(),
  ): Promise<number> {
    const round = this.round?.keep === keep ? this.round : undefined;
    if (round && round.nextBatchAt > performance.now()) await sleep(round.nextBatchAt - performance.now());
    const started = performance.now();
    let after = round?.after;
    const expired: string[] = [];
    for (let ended = false; !ended && expired.length < limit;) {
      // Pages of what the batch still lacks (the kept bodies between make it short), never tiny.
      const page = Math.max(limit - expired.length, Math.ceil(limit / 10));
      const rows = await this.dataSource.query<ExpiredBody[]>(
        `SELECT id, expires_at::text AS at FROM "${CLAIM_CHECK_TABLE}" WHERE expires_at <= $1 ` +
          (after ? `AND (expires_at, id) > ($3::timestamptz, $4::uuid) ` : '') +
          `ORDER BY expires_at, id LIMIT $2`,
        after ? [now, page, after.at, after.id] : [now, page],
      );
      ended = rows.length < page;
      for (const row of rows) {
        if (expired.length === limit) break;
        after = row;
        if (!keep.has(row.id)) expired.push(row.id);
      }
    }
    // NOTE: TypeORM's postgres driver answers a DELETE with [rows, affected count].
    const [, count] =
      expired.length === 0
        ? [undefined, 0]
        : await this.dataSource.query<[unknown, number]>(
            `DELETE FROM "${CLAIM_CHECK_TABLE}" WHERE id = ANY(ARRAY(SELECT id FROM "${CLAIM_CHECK_TABLE}" ` +
              `WHERE id = ANY($1::uuid[]) AND expires_at <= $2 FOR UPDATE SKIP LOCKED))`,
            [expired, now],
          );
    const finished = performance.now();
    this.round = { keep, after, nextBatchAt: finished + (finished - started) };
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
