import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfigurationError } from '../errors/configuration.error';
import type { SagaHistoryEntry, SagaInstanceView } from './saga-instance-view';
import type { SagaStatus } from './saga-store';
import { MemorySagaStore } from './memory-saga-store';

export type { SagaHistoryEntry, SagaInstanceView } from './saga-instance-view';

/** One instance as `SagaInstances.list()` shows it: no state, no history. */
export interface SagaInstanceSummary {
  readonly sagaName: string;
  readonly correlationKey: string;
  readonly status: SagaStatus;
  readonly version: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly completedAt: Date | null;
  /** How many timeouts it waits for. */
  readonly pendingTimeouts: number;
}

/** Options of `SagaInstances.list()`. */
export interface SagaListOptions {
  /** Only instances with this status. Default: both. */
  status?: SagaStatus;
  /** Keyset paging: only instances whose correlation key sorts after this one (the last of the previous page). */
  after?: string;
  /** The most instances, 1 to 1000. Default: 100. */
  limit?: number;
}

/** The most history entries `find()` returns. */
const MAX_HISTORY = 1000;
/** The most instances `list()` returns. */
const MAX_LIST = 1000;
/** The longest saga name or correlation key a list names. */
const MAX_KEY_LENGTH = 1024;

/**
 * Reads saga instances for inspection (an operator's console, a support endpoint, a test), and prunes completed
 * ones. Reads go to the module's DataSource outside any step's transaction: what they show is what has committed
 * (and, for a `find()` in the caller's transaction, what that transaction wrote).
 * With `inbox.store: 'memory'` (tests without a database) they read the instances kept in memory instead.
 */
@Injectable()
export class SagaInstances {
  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly memory: MemorySagaStore,
  ) {}

  /**
   * The instance of `sagaName` with `correlationKey`, with its latest `historyLimit` history entries (default 100,
   * at most 1000), or undefined when there is none (never started, or pruned). The instance and its history are
   * read in one snapshot: in `manager`'s transaction when given (a `REPEATABLE READ` one shows the instance as of
   * the caller's other reads in it, and what it wrote), else in a `REPEATABLE READ` transaction of its own.
   */
  async find(
    sagaName: string,
    correlationKey: string,
    { historyLimit = 100, manager }: { historyLimit?: number; manager?: EntityManager } = {},
  ): Promise<SagaInstanceView | undefined> {
    const limit = Math.min(Math.max(Math.trunc(historyLimit), 0), MAX_HISTORY);
    if (this.inMemory) return this.memory.find(sagaName, correlationKey, limit);
    if (manager && manager.connection !== this.dataSource()) {
      throw new ConfigurationError(
        "find(): the manager belongs to another DataSource than the module's dataSource option",
      );
    }
    // A manager outside a transaction would read in two snapshots: it gets a transaction of its own, as without one.
    if (manager?.queryRunner?.isTransactionActive) return this.read(manager, sagaName, correlationKey, limit);
    return (manager ?? this.dataSource().manager).transaction('REPEATABLE READ', (own) =>
      this.read(own, sagaName, correlationKey, limit),
    );
  }

  private async read(
    manager: EntityManager,
    sagaName: string,
    correlationKey: string,
    limit: number,
  ): Promise<SagaInstanceView | undefined> {
    const rows = await manager.query<Array<Omit<SagaInstanceView, 'history'> & { id: string }>>(
      `SELECT "id"::text AS "id", "saga" AS "sagaName", "correlation_key" AS "correlationKey", "status", "state", ` +
        `"version", "created_at" AS "createdAt", "updated_at" AS "updatedAt", "completed_at" AS "completedAt", ` +
        `"timeouts" AS "pendingTimeouts" FROM "rm_saga" WHERE "saga" = $1 AND "correlation_key" = $2`,
      [sagaName, correlationKey],
    );
    const row = rows[0];
    if (!row) return undefined;
    const history = await manager.query<SagaHistoryEntry[]>(
      `SELECT "version", "message_id" AS "messageId", "message_type" AS "messageType", "step", "outcome", ` +
        `"handled_at" AS "handledAt" FROM (SELECT * FROM "rm_saga_history" WHERE "saga_id" = $1::bigint ` +
        `ORDER BY "id" DESC LIMIT $2) latest ORDER BY "id"`,
      [row.id, limit],
    );
    const { id: _id, ...instance } = row;
    return { ...instance, history };
  }

  /**
   * The instances of `sagaName` in correlation-key order (the database's collation), after `after` when given, up to `limit`
   * (default 100, at most 1000), of one status when given: a walk of the (saga, correlation key) index, so a page
   * costs the same however many instances there are. Completed instances stay listed until pruned.
   */
  async list(
    sagaName: string,
    { status, after, limit = 100 }: SagaListOptions = {},
  ): Promise<SagaInstanceSummary[]> {
    const text = (name: string, value: unknown): void => {
      if (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY_LENGTH) {
        throw new RangeError(`list(): ${name} must be a string of 1 to ${MAX_KEY_LENGTH} characters`);
      }
    };
    text('sagaName', sagaName);
    if (after !== undefined) text('after', after);
    if (status !== undefined && status !== 'active' && status !== 'completed') {
      throw new RangeError(`list(): status must be 'active' or 'completed'`);
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) {
      throw new RangeError(`list(): limit must be an integer from 1 to ${MAX_LIST}, got ${limit}`);
    }
    const values: unknown[] = [sagaName, limit];
    const where = ['"saga" = $1'];
    if (status !== undefined) where.push(`"status" = $${values.push(status)}`);
    if (after !== undefined) where.push(`"correlation_key" > $${values.push(after)}`);
    const rows = await this.dataSource().query<
      Array<Omit<SagaInstanceSummary, 'pendingTimeouts'> & { pendingTimeouts: number }>
    >(
      `SELECT "saga" AS "sagaName", "correlation_key" AS "correlationKey", "status", "version", ` +
        `"created_at" AS "createdAt", "updated_at" AS "updatedAt", "completed_at" AS "completedAt", ` +
        `jsonb_array_length("timeouts")::int AS "pendingTimeouts" FROM "rm_saga" WHERE ${where.join(' AND ')} ` +
        `ORDER BY "correlation_key" LIMIT $2`,
      values,
    );
    return rows;
  }

  /**
   * Deletes up to `limit` (default 1000) instances completed more than `olderThanMs` ago, with their history;
   * resolves with how many went. A late message for a pruned instance then meets its step's `onMissing` policy.
   */
  async pruneCompleted(olderThanMs: number, limit = 1000): Promise<number> {
    if (!Number.isFinite(olderThanMs) || olderThanMs < 0 || !Number.isInteger(limit) || limit < 1) {
      throw new RangeError('pruneCompleted(olderThanMs, limit): olderThanMs ≥ 0 and an integer limit ≥ 1');
    }
    if (this.inMemory) return this.memory.pruneCompleted(new Date(Date.now() - olderThanMs), limit);
    const [, count] = await this.dataSource().query<[unknown, number]>(
      `DELETE FROM "rm_saga" WHERE "id" = ANY(ARRAY(SELECT "id" FROM "rm_saga" WHERE "completed_at" < ` +
        `now() - $1 * interval '1 millisecond' LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [olderThanMs, limit],
    );
    return count;
  }

  private get inMemory(): boolean {
    return this.options.inbox.store === 'memory';
  }

  private dataSource(): DataSource {
    const dataSource = this.options.dataSource;
    if (!dataSource) {
      throw new ConfigurationError(
        "SagaInstances: sagas live in the module's database; configure the dataSource option",
      );
    }
    return dataSource;
  }
}
