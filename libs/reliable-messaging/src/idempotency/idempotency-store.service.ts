import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { TransactionContext } from '../database/transaction-context.service';
import { ConfigurationError } from '../errors/configuration.error';
import { IdempotencyKeyInFlightError } from '../errors/idempotency-key-in-flight.error';
import { IDEMPOTENCY_KEYS_TABLE } from './idempotency-key.entity';
import { RESOLVED_IDEMPOTENCY_OPTIONS } from './idempotency-module-definition';
import type { ResolvedIdempotencyOptions } from './idempotency.options';

/** A request's claim on its idempotency key. */
export interface IdempotentRequest {
  scope: string;
  /** Who sent it, as stored: see `storedCaller()`. */
  caller: string;
  key: string;
  method: string;
  path: string;
  fingerprint: string;
}

/** What a claim found: the key is this request's now, it answered before, or it came with another request. */
export type KeyClaim =
  | { outcome: 'claimed' }
  | { outcome: 'replay'; status: number; body: unknown }
  | { outcome: 'mismatch'; storedMethod: string; storedPath: string };

/** PostgreSQL's lock_not_available: `lock_timeout` passed while waiting for the key's row. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * The `rm_idempotency_keys` table. A key is claimed by inserting its row in the caller's transaction, before the
 * handler runs: a second request with the same key then waits on the row (PostgreSQL's unique index) until the
 * first commits, and finds its response, or rolls back, and claims the key itself.
 */
@Injectable()
export class IdempotencyStore implements OnApplicationBootstrap {
  constructor(
    @Inject(RESOLVED_IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly transactions: TransactionContext,
  ) {}

  /**
   * Fails the start when there is no DataSource, no transactional plugin on it or no table to keep keys in,
   * saying what to add. Without the plugin the handler's writes could not join the key's transaction: an order
   * could commit without its key (a retry places a second one), or the key without the order.
   */
  async onApplicationBootstrap(): Promise<void> {
    const dataSource = this.transactions.dataSource;
    if (!dataSource) {
      throw new ConfigurationError(
        'IdempotencyModule: idempotency keys live in the database; set the ReliableMessagingModule option dataSource',
      );
    }
    if (!this.transactions.usesCls) {
      throw new ConfigurationError(
        "IdempotencyModule: @Idempotent() routes need nestjs-cls' transactional plugin on the module's " +
          "dataSource, so that the handler's writes commit in one transaction with the key. Import " +
          'ClsModule.forRoot({ global: true, plugins: [new ClsPluginTransactional({ imports: [TypeOrmModule], ' +
          'adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }) })] }) for the DataSource ' +
          'given to ReliableMessagingModule (packages @nestjs-cls/transactional and ' +
          '@nestjs-cls/transactional-adapter-typeorm); see docs/http-idempotency.md',
      );
    }
    const [row] = await dataSource.query<Array<{ table: string | null }>>(
      `SELECT to_regclass($1) AS "table"`,
      [IDEMPOTENCY_KEYS_TABLE],
    );
    if (!row?.table) {
      throw new ConfigurationError(
        `IdempotencyModule: table ${IDEMPOTENCY_KEYS_TABLE} missing from the database; add ` +
          'RELIABLE_MESSAGING_MIGRATIONS to the DataSource migrations with migrationsRun: true',
      );
    }
  }

  /**
   * Claims `request.key` in the transaction of `manager`, or reads what the key answered before. An expired row
   * is taken over as if it were not there. Waits at most `lockTimeoutMs` for a request in flight with the same
   * key, then throws IdempotencyKeyInFlightError (the transaction is then aborted: roll it back).
   */
  async claim(manager: EntityManager, request: IdempotentRequest): Promise<KeyClaim> {
    const rows = await this.withLockTimeout(manager, request, () =>
      manager.query<unknown[]>(
        `INSERT INTO "rm_idempotency_keys" AS k ` +
          `("scope", "caller", "idempotency_key", "request_method", "request_path", "fingerprint", "expires_at") ` +
          `VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond') ` +
          `ON CONFLICT ("scope", "caller", "idempotency_key") DO UPDATE SET ` +
          `"request_method" = EXCLUDED."request_method", "request_path" = EXCLUDED."request_path", ` +
          `"fingerprint" = EXCLUDED."fingerprint", "response_status" = NULL, "response_body" = NULL, ` +
          `"created_at" = now(), "expires_at" = EXCLUDED."expires_at" ` +
          `WHERE k."expires_at" <= now() RETURNING 1`,
        [
          request.scope,
          request.caller,
          request.key,
          request.method,
          request.path,
          request.fingerprint,
          this.options.ttlMs,
        ],
      ),
    );
    if (rows.length > 0) return { outcome: 'claimed' };
    const [stored] = await manager.query<
      Array<{
        request_method: string;
        request_path: string;
        fingerprint: string;
        response_status: number | null;
        response_body: string | null;
      }>
    >(
      `SELECT "request_method", "request_path", "fingerprint", "response_status", "response_body" ` +
        `FROM "rm_idempotency_keys" WHERE "scope" = $1 AND "caller" = $2 AND "idempotency_key" = $3`,
      [request.scope, request.caller, request.key],
    );
    // NOTE: a row without a response is visible only to the transaction claiming it: this is that transaction,
    // asked twice for one key (an outer transaction joined by two idempotent calls).
    if (!stored || stored.response_status === null) {
      throw new IdempotencyKeyInFlightError(request.scope, request.key);
    }
    if (stored.fingerprint !== request.fingerprint) {
      return { outcome: 'mismatch', storedMethod: stored.request_method, storedPath: stored.request_path };
    }
    return {
      outcome: 'replay',
      status: stored.response_status,
      body: stored.response_body === null ? undefined : (JSON.parse(stored.response_body) as unknown),
    };
  }

  /** Stores the response of a claimed key, in the same transaction as the claim and the handler's work. */
  async complete(
    manager: EntityManager,
    request: Pick<IdempotentRequest, 'scope' | 'caller' | 'key'>,
    status: number,
    body: unknown,
  ): Promise<void> {
    await manager.query(
      `UPDATE "rm_idempotency_keys" SET "response_status" = $4, "response_body" = $5 ` +
        `WHERE "scope" = $1 AND "caller" = $2 AND "idempotency_key" = $3`,
      [request.scope, request.caller, request.key, status, body === undefined ? null : JSON.stringify(body)],
    );
  }

  /**
   * Deletes up to `limit` expired keys, the first to expire first (from the `expires_at` index, not a scan of the
   * table: see InboxStore.prune); resolves with how many went.
   */
  async prune(limit: number): Promise<number> {
    const [, count] = await this.dataSource().query<[unknown, number]>(
      `DELETE FROM "rm_idempotency_keys" WHERE ctid = ANY(ARRAY(SELECT ctid FROM "rm_idempotency_keys" ` +
        `WHERE "expires_at" <= now() ORDER BY "expires_at" LIMIT $1 FOR UPDATE SKIP LOCKED))`,
      [limit],
    );
    return count;
  }

  /** The DataSource holding the table: the messaging module's `dataSource`. */
  dataSource(): DataSource {
    const dataSource = this.transactions.dataSource;
    if (!dataSource) {
      throw new Error('idempotency keys need the ReliableMessagingModule option dataSource');
    }
    return dataSource;
  }

  /**
   * Runs `work` with the transaction's `lock_timeout` set to `lockTimeoutMs`, then puts the previous value back,
   * so the handler's own statements wait as they would without idempotency.
   */
  private async withLockTimeout<T>(
    manager: EntityManager,
    request: IdempotentRequest,
    work: () => Promise<T>,
  ): Promise<T> {
    const [{ previous }] = await manager.query<Array<{ previous: string }>>(
      `SELECT current_setting('lock_timeout') AS previous, set_config('lock_timeout', $1, true)`,
      [`${this.options.lockTimeoutMs}ms`],
    );
    let result: T;
    try {
      result = await work();
    } catch (error) {
      if (sqlState(error) === LOCK_NOT_AVAILABLE) {
        throw new IdempotencyKeyInFlightError(request.scope, request.key);
      }
      throw error;
    }
    await manager.query(`SELECT set_config('lock_timeout', $1, true)`, [previous]);
    return result;
  }
}

function sqlState(error: unknown): unknown {
  const { code, driverError } = (error ?? {}) as { code?: unknown; driverError?: { code?: unknown } };
  return code ?? driverError?.code;
}
