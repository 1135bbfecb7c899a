import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { HEADERS, RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboundMessage } from '../envelope/envelope';
import { preparedCommand, preparedQuery, type PreparedStatement } from '../database/prepared-query';
import type { ScheduledDelivery } from './scheduled-delivery';

/** The channel promoters LISTEN on; a process that schedules a message due soon but promotes nothing NOTIFYs it. */
export const SCHEDULED_CHANNEL = 'rm_scheduled';

/**
 * Up to this many scheduled rows the count is exact (an index-only count, a few milliseconds); above it, the
 * planner's estimate from the table's size, which costs nothing however large the table.
 */
export const EXACT_COUNT_BELOW = 100_000;

/** What one promotion did: how many rows entered the outbox, and when the next row not yet due is. */
export interface Promotion {
  promoted: number;
  /** Milliseconds (by the database's clock) until the earliest row not yet due; undefined when there is none. */
  nextDueInMs?: number;
}

/** How many messages wait for their time, and how late the most overdue one is. */
export interface ScheduledBacklog {
  /** Rows waiting: exact below EXACT_COUNT_BELOW, else the planner's estimate. */
  scheduled: number;
  /** Whether `scheduled` is an exact count. */
  exact: boolean;
  /** Seconds since the earliest row still waiting became due; 0 when none is overdue. */
  oldestOverdueSeconds: number;
}

/** A scheduled message as operators list it. */
export interface ScheduledRow {
  id: string;
  messageId: string;
  idempotencyKey: string;
  type?: string;
  exchange: string;
  routingKey: string;
  orderingKey: string | null;
  deliverAt: Date;
  createdAt: Date;
}

/** Which waiting rows `ScheduledMessages.list()` returns; every field given must match. */
export interface ScheduledListFilter {
  /** The message id `publish()` returned (a UUID). */
  messageId?: string;
  /** The idempotency key, exactly. */
  idempotencyKey?: string;
  /** The message type (its `type` property), exactly. */
  type?: string;
  /** Due before this moment. */
  dueBefore?: Date;
  /** Keyset paging: only rows after this one in delivery order (the last row of the previous page). */
  after?: { deliverAt: Date; id: string };
}

const INSERT_COLUMNS =
  'INSERT INTO "rm_scheduled" ("message_id", "idempotency_key", "exchange", "routing_key", "properties", "body", ' +
  '"ordering_key", "deliver_at")';

/** The delivery time: the moment given, else the delay after the statement began, on the database's clock. */
const DELIVER_AT = (at: string, afterMs: string): string =>
  `COALESCE(${at}::timestamptz, statement_timestamp() + ${afterMs}::float8 * interval '1 millisecond')`;

/**
 * Moves up to $1 due rows into the outbox in one statement, so a row is in exactly one of the two tables whatever
 * fails: the due rows are locked in delivery order (SKIP LOCKED: promoters in other processes take others),
 * deleted, and inserted into the outbox in that order, so they get outbox ids in it. The same statement reads how
 * long until the next row is due; a due row is never in that walk, and a row another promoter holds is left to it.
 * The AMQP `timestamp` becomes the promotion's time, when the message is sent: the queue-age metric reads it, and
 * a message waiting out its schedule is not late in its queue. Its `occurredAt` stays as published; the
 * `rm-scheduled-for` header gets its delivery time, from which consumer lag counts.
 *
 * NOTE: the due ids are collected into an array (`= ANY(ARRAY(...))`) rather than joined (`IN (...)`): on a table
 * without fresh statistics PostgreSQL planned the join as a hash join over a sequential scan of the whole table,
 * every row not yet due included; an array of ids can only be looked up in the primary key.
 */
export const PROMOTE =
  `WITH due AS (DELETE FROM "rm_scheduled" WHERE "id" = ANY(ARRAY(SELECT "id" FROM "rm_scheduled" ` +
  `WHERE "deliver_at" <= now() ORDER BY "deliver_at", "id" LIMIT $1 FOR UPDATE SKIP LOCKED)) ` +
  `RETURNING "id", "message_id", "exchange", "routing_key", "properties", "body", "ordering_key", "deliver_at"), ` +
  `moved AS (INSERT INTO "rm_outbox" ("message_id", "exchange", "routing_key", "properties", "body", "ordering_key") ` +
  `SELECT "message_id", "exchange", "routing_key", ` +
  `jsonb_set(jsonb_set("properties", '{timestamp}', to_jsonb(floor(EXTRACT(EPOCH FROM now()))::bigint)), ` +
  `'{headers,${HEADERS.scheduledFor}}', to_jsonb("deliver_at")), "body", "ordering_key" FROM due ` +
  `ORDER BY "deliver_at", "id" RETURNING 1) ` +
  `SELECT (SELECT count(*) FROM moved)::int AS promoted, ` +
  `(SELECT EXTRACT(EPOCH FROM min(s."deliver_at") - clock_timestamp()) * 1000 FROM "rm_scheduled" s ` +
  `WHERE s."deliver_at" > now())::float8 AS next_due_in_ms`;

/**
 * The backlog in one statement. The estimate scales the planner's rows per page by the table's current size, as
 * the planner does; a table never analyzed (no pages counted) is counted. The count is a subquery PostgreSQL runs
 * only when the CASE reaches it. The oldest overdue row is the first entry of the delivery-time index.
 */
export const BACKLOG =
  `SELECT CASE WHEN e.estimate >= $1 THEN e.estimate ELSE (SELECT count(*) FROM "rm_scheduled") END::float8 AS scheduled, ` +
  `e.estimate >= $1 AS estimated, ` +
  `COALESCE((SELECT EXTRACT(EPOCH FROM now() - min("deliver_at")) FROM "rm_scheduled" WHERE "deliver_at" <= now()), 0)::float8 ` +
  `AS oldest_overdue FROM (SELECT CASE WHEN c.relpages > 0 AND c.reltuples >= 0 THEN ` +
  `c.reltuples / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::int) ELSE -1 END AS estimate ` +
  `FROM pg_class c WHERE c.oid = '"rm_scheduled"'::regclass) e`;

/**
 * Every query on the scheduled messages table: writing a row in the caller's transaction, promoting due rows into
 * the outbox, cancelling, and reading the backlog.
 */
@Injectable()
export class ScheduledStore {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /**
   * Writes `messages` in `manager`'s transaction, due at `delivery`, with one statement, in their order; those
   * without an ordering key take `group` as theirs (see insertStatement).
   */
  async insert(
    manager: EntityManager,
    messages: readonly OutboundMessage[],
    delivery: ScheduledDelivery,
    group?: string,
  ): Promise<void> {
    const { name, text, values } = this.insertStatement(messages, delivery, group);
    await preparedQuery(manager, name, text, values);
  }

  /**
   * The statement that writes `messages`, due at `delivery`; rows due together keep this order, and enter the
   * outbox in it. Those without an ordering key of their own take `group`, so that the relay sends them in that
   * order too (as it does a transaction's messages, see OutboxWriter).
   */
  insertStatement(
    messages: readonly OutboundMessage[],
    delivery: ScheduledDelivery,
    group?: string,
  ): PreparedStatement {
    const at = delivery.at ?? null;
    const afterMs = delivery.afterMs ?? null;
    if (messages.length === 1) {
      return {
        name: 'rm_scheduled_insert',
        text: `${INSERT_COLUMNS} VALUES ($1, $2, $3, $4, $5, $6, $7, ${DELIVER_AT('$8', '$9')})`,
        values: [...rowValues(messages[0], group), at, afterMs],
      };
    }
    const columns: unknown[][] = [[], [], [], [], [], [], []];
    for (const message of messages)
      rowValues(message, group).forEach((value, column) => columns[column].push(value));
    return {
      name: 'rm_scheduled_insert_many',
      text:
        `${INSERT_COLUMNS} SELECT m, i, e, r, p, b, k, ${DELIVER_AT('$8', '$9')} ` +
        `FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::bytea[], $7::text[]) ` +
        `WITH ORDINALITY AS batch (m, i, e, r, p, b, k, position) ORDER BY position`,
      values: [...columns, at, afterMs],
    };
  }

  /** Moves up to `limit` due rows into the outbox (see PROMOTE); one statement, one transaction. */
  async promote(limit: number): Promise<Promotion> {
    const [row] = await this.dataSource().query<Array<{ promoted: number; next_due_in_ms: number | null }>>(
      PROMOTE,
      [limit],
    );
    return {
      promoted: row.promoted,
      nextDueInMs: row.next_due_in_ms === null ? undefined : Math.max(0, row.next_due_in_ms),
    };
  }

  /**
   * Deletes the waiting rows of a message id or of an idempotency key, in `manager`'s transaction (else on its
   * own); resolves with how many went. A row a promotion holds is waited for, and is gone by then.
   */
  async cancel(
    by: { messageId: string } | { idempotencyKey: string },
    manager?: EntityManager,
  ): Promise<number> {
    const statement: PreparedStatement =
      'messageId' in by
        ? {
            name: 'rm_scheduled_cancel_by_id',
            text: 'DELETE FROM "rm_scheduled" WHERE "message_id" = $1',
            values: [by.messageId],
          }
        : {
            name: 'rm_scheduled_cancel_by_key',
            text: 'DELETE FROM "rm_scheduled" WHERE "idempotency_key" = $1',
            values: [by.idempotencyKey],
          };
    return preparedCommand(manager ?? this.dataSource().manager, statement);
  }

  /** The number of rows waiting and the lateness of the most overdue one (see BACKLOG). */
  async backlog(): Promise<ScheduledBacklog> {
    const [row] = await this.dataSource().query<
      Array<{ scheduled: number; estimated: boolean; oldest_overdue: number }>
    >(BACKLOG, [EXACT_COUNT_BELOW]);
    return {
      scheduled: Math.max(0, Math.round(row.scheduled)),
      exact: !row.estimated,
      oldestOverdueSeconds: Math.max(0, row.oldest_overdue),
    };
  }

  /**
   * Waiting rows matching `filter`, the first due first, up to `limit`: a walk of the delivery-time index from
   * `filter.after` (keyset paging), with only the conditions given, each a parameter.
   */
  async list(limit: number, filter: ScheduledListFilter = {}): Promise<ScheduledRow[]> {
    const values: unknown[] = [limit];
    const where: string[] = [];
    const param = (value: unknown): string => `$${values.push(value)}`;
    if (filter.messageId !== undefined) where.push(`"message_id" = ${param(filter.messageId)}::uuid`);
    if (filter.idempotencyKey !== undefined)
      where.push(`"idempotency_key" = ${param(filter.idempotencyKey)}`);
    if (filter.type !== undefined) where.push(`"properties"->>'type' = ${param(filter.type)}`);
    if (filter.dueBefore !== undefined) where.push(`"deliver_at" < ${param(filter.dueBefore)}`);
    if (filter.after !== undefined) {
      // NOTE: deliver_at holds microseconds and a Date only milliseconds, so the row's own time is read back (once,
      // an InitPlan); the given time stands in only when that row has gone (cancelled, or promoted) meanwhile.
      const id = param(filter.after.id);
      where.push(
        `("deliver_at", "id") > (COALESCE((SELECT a."deliver_at" FROM "rm_scheduled" a WHERE a."id" = ${id}::bigint), ` +
          `${param(filter.after.deliverAt)}::timestamptz), ${id}::bigint)`,
      );
    }
    const rows = await this.dataSource().query<
      Array<{
        id: string;
        message_id: string;
        idempotency_key: string;
        type: string | null;
        exchange: string;
        routing_key: string;
        ordering_key: string | null;
        deliver_at: Date;
        created_at: Date;
      }>
    >(
      `SELECT "id"::text AS id, "message_id", "idempotency_key", "properties"->>'type' AS type, "exchange", ` +
        `"routing_key", "ordering_key", "deliver_at", "created_at" FROM "rm_scheduled" ` +
        `${where.length > 0 ? `WHERE ${where.join(' AND ')} ` : ''}ORDER BY "deliver_at", "id" LIMIT $1`,
      values,
    );
    return rows.map((row) => ({
      id: row.id,
      messageId: row.message_id,
      idempotencyKey: row.idempotency_key,
      type: row.type ?? undefined,
      exchange: row.exchange,
      routingKey: row.routing_key,
      orderingKey: row.ordering_key,
      deliverAt: row.deliver_at,
      createdAt: row.created_at,
    }));
  }

  private dataSource(): DataSource {
    const dataSource = this.options.dataSource;
    if (!dataSource) throw new Error('scheduled messages need the module option dataSource');
    return dataSource;
  }
}

/** A message's values for INSERT_COLUMNS but the delivery time; without an ordering key it takes `group`. */
function rowValues(message: OutboundMessage, group: string | undefined): unknown[] {
  const { messageId, headers } = message.properties;
  const key = headers?.[HEADERS.idempotencyKey];
  return [
    messageId,
    typeof key === 'string' ? key : messageId,
    message.exchange,
    message.routingKey,
    JSON.stringify(message.properties),
    message.body,
    message.orderingKey ?? group ?? null,
  ];
}
