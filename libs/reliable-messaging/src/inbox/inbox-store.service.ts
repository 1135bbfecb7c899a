import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { Envelope } from '../envelope/envelope';
import { preparedQuery } from '../database/prepared-query';

/** The queries on the inbox table. */
@Injectable()
export class InboxStore {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /**
   * Records that `consumer` is handling the message, in the handler's transaction. Resolves false when a row for
   * the same consumer and idempotency key exists: a duplicate. While another transaction holds an uncommitted
   * row for that key this waits for it, so of two concurrent copies exactly one gets true.
   */
  async record(manager: EntityManager, consumer: string, envelope: Envelope): Promise<boolean> {
    const rows = await preparedQuery(
      manager,
      'rm_inbox_record',
      `INSERT INTO "rm_inbox" ("consumer", "idempotency_key", "message_id", "message_type") VALUES ($1, $2, $3, $4) ` +
        `ON CONFLICT DO NOTHING RETURNING 1 AS fresh`,
      [consumer, envelope.idempotencyKey, envelope.messageId, envelope.type],
    );
    return rows.length === 1;
  }

  /** Deletes up to `limit` rows handled longer than `retentionMs` ago; resolves with how many went. */
  async prune(retentionMs: number, limit: number): Promise<number> {
    const [, count] = await this.dataSource().query<[unknown, number]>(
      `DELETE FROM "rm_inbox" WHERE ctid = ANY(ARRAY(SELECT ctid FROM "rm_inbox" ` +
        `WHERE "processed_at" < now() - $1 * interval '1 millisecond' LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [retentionMs, limit],
    );
    return count;
  }

  private dataSource(): DataSource {
    const dataSource = this.options.dataSource;
    if (!dataSource) throw new Error('the inbox needs the module option dataSource');
    return dataSource;
  }
}
