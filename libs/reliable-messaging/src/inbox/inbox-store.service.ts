import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { Envelope } from '../envelope/envelope';
import type { PreparedStatement } from '../database/prepared-query';

const RECORD_TEXT =
  `INSERT INTO "rm_inbox" ("consumer", "idempotency_key", "message_id", "message_type") VALUES ($1, $2, $3, $4) ` +
  `ON CONFLICT DO NOTHING`;

/** The queries on the inbox table. */
@Injectable()
export class InboxStore {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /**
   * The statement that records that `consumer` is handling the message, the first of the handler's
   * transaction. It inserts one row, or none when a row for the same consumer and idempotency key exists: a
   * duplicate (`isFresh()` tells). While another transaction holds an uncommitted row for that key it waits for
   * it, so of two concurrent copies exactly one gets its row.
   */
  recordStatement(consumer: string, envelope: Envelope): PreparedStatement {
    return {
      name: 'rm_inbox_record',
      text: RECORD_TEXT,
      values: [consumer, envelope.idempotencyKey, envelope.messageId, envelope.type],
    };
  }

  /** Whether the record statement, having inserted `affected` rows, found the message new, not a duplicate. */
  isFresh(affected: number): boolean {
    return affected === 1;
  }

  /**
   * Deletes up to `limit` rows handled longer than `retentionMs` ago, oldest first; resolves with how many went.
   * The oldest first, so that the batch comes from the `processed_at` index: without an order PostgreSQL scans the
   * table, and once pruning has freed its first pages for new rows, each batch would read past every row still
   * kept to reach the expired ones.
   */
  async prune(retentionMs: number, limit: number): Promise<number> {
    const [, count] = await this.dataSource().query<[unknown, number]>(
      `DELETE FROM "rm_inbox" WHERE ctid = ANY(ARRAY(SELECT ctid FROM "rm_inbox" ` +
        `WHERE "processed_at" < now() - $1 * interval '1 millisecond' ORDER BY "processed_at" LIMIT $2 ` +
        `FOR UPDATE SKIP LOCKED))`,
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
