import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { ConfigurationError } from '../errors/configuration.error';
import type { SagaHistoryEntry, SagaInstanceView } from './saga-instance-view';
import { MemorySagaStore } from './memory-saga-store';

export type { SagaHistoryEntry, SagaInstanceView } from './saga-instance-view';

/** The most history entries `find()` returns. */
const MAX_HISTORY = 1000;

/**
 * Reads saga instances for inspection (an operator's console, a support endpoint, a test), and prunes completed
 * ones. Reads go to the module's DataSource outside any step's transaction: what they show is what has committed.
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
   * at most 1000), or undefined when there is none (never started, or pruned).
   */
  async find(
    sagaName: string,
    correlationKey: string,
    { historyLimit = 100 }: { historyLimit?: number } = {},
  ): Promise<SagaInstanceView | undefined> {
    const limit = Math.min(Math.max(Math.trunc(historyLimit), 0), MAX_HISTORY);
    if (this.inMemory) return this.memory.find(sagaName, correlationKey, limit);
    const rows = await this.dataSource().query<Array<Omit<SagaInstanceView, 'history'> & { id: string }>>(
      `SELECT "id"::text AS "id", "saga" AS "sagaName", "correlation_key" AS "correlationKey", "status", "state", ` +
        `"version", "created_at" AS "createdAt", "updated_at" AS "updatedAt", "completed_at" AS "completedAt", ` +
        `"timeouts" AS "pendingTimeouts" FROM "rm_saga" WHERE "saga" = $1 AND "correlation_key" = $2`,
      [sagaName, correlationKey],
    );
    const row = rows[0];
    if (!row) return undefined;
    const history = await this.dataSource().query<SagaHistoryEntry[]>(
      `SELECT "version", "message_id" AS "messageId", "message_type" AS "messageType", "step", "outcome", ` +
        `"handled_at" AS "handledAt" FROM (SELECT * FROM "rm_saga_history" WHERE "saga_id" = $1::bigint ` +
        `ORDER BY "id" DESC LIMIT $2) latest ORDER BY "id"`,
      [row.id, limit],
    );
    const { id: _id, ...instance } = row;
    return { ...instance, history };
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
