import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS, TRANSACTION_GROUP_PREFIX } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { OutboundMessage, OutboundProperties } from '../envelope/envelope';
import { preparedQuery, type PreparedStatement } from '../database/prepared-query';
import { beginOn } from '../database/pipelined-transaction';
import { isOutboxRowId } from './outbox-row-id';

/** The channel relays LISTEN on; processes that write rows but don't relay NOTIFY it after their commits. */
export const OUTBOX_CHANNEL = 'rm_outbox';

/** Namespace of the relay's advisory locks on ordering keys (`pg_try_advisory_xact_lock(namespace, hashtext(key))`). */
const ORDERING_LOCK_NAMESPACE = 0x524d4f58;

/** A row the relay claimed: the message as stored, its ordering key and its failed attempts so far. */
export interface ClaimedRow {
  id: string;
  message: OutboundMessage;
  orderingKey: string | null;
  attempts: number;
  /** The pending row of its key just before it, as the claim's snapshot had it; null without one or a key. */
  previousId: string | null;
}

/** What became of a claimed row: published, set aside for good, or to be tried again after a delay. */
export type RelayOutcome =
  | { id: string; outcome: 'published' }
  | { id: string; outcome: 'parked'; reason: string }
  | { id: string; outcome: 'failed'; error: string; retryInMs: number };

/** How much of the outbox waits: pending rows, the age of the oldest one, and parked rows. */
export interface OutboxBacklog {
  /** Rows not yet published (including rows waiting out a retry delay). */
  pending: number;
  /** Seconds since the oldest pending row was written; 0 when none is pending. */
  oldestAgeSeconds: number;
  /** Rows set aside as unpublishable, waiting for someone to look at them. */
  parked: number;
}

/** A parked row, as `OutboxMonitor.parked()` lists it. */
export interface ParkedRow {
  id: string;
  messageId: string;
  type?: string;
  exchange: string;
  routingKey: string;
  reason: string | null;
  parkedAt: Date;
}

/** A parked row an operator retried or discarded. */
export interface MovedRow {
  id: string;
  messageId: string;
}

/** What `findParked` selects on (see OutboxFilter, whose checked values it takes). */
export interface ParkedRowQuery {
  ids?: string[];
  type?: string;
  orderingKey?: string;
  since?: Date;
  until?: Date;
  text?: string;
}

/** A parked row as `findParked` reads it. */
export interface StoredParkedRow {
  id: string;
  message_id: string;
  exchange: string;
  routing_key: string;
  properties: OutboundProperties;
  body: Buffer;
  ordering_key: string | null;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  parked_at: Date | null;
  holding_back: number;
}

/** What an insert returns: each row's id, and whether it has no ordering key. */
const RETURNING_KEYLESS = 'RETURNING "id", "ordering_key" IS NULL AS "keyless"';

const INSERT_COLUMNS =
  'INSERT INTO "rm_outbox" ("message_id", "exchange", "routing_key", "properties", "body", "ordering_key")';

/**
 * A message's values for INSERT_COLUMNS. A message without an ordering key of its own takes `group`, the key its
 * transaction's other such rows share, or none: a transaction's only keyless row stays keyless, off the key index
 * and free of the relay's key locks.
 */
function rowValues(message: OutboundMessage, group: string | undefined): unknown[] {
  return [
    message.properties.messageId,
    message.exchange,
    message.routingKey,
    JSON.stringify(message.properties),
    message.body,
    message.orderingKey ?? group ?? null,
  ];
}

/** SQL: whether the row aliased `alias` has a key a parked row holds (a user's key, not a transaction's). */
const holdsWhenParked = (alias: string): string =>
  `${alias}"ordering_key" NOT LIKE '${TRANSACTION_GROUP_PREFIX}%'`;

/** Whether a parked row of this key holds back its later rows (see TRANSACTION_GROUP_PREFIX). */
export function parkedRowHolds(orderingKey: string | null): boolean {
  return orderingKey !== null && !orderingKey.startsWith(TRANSACTION_GROUP_PREFIX);
}

interface StoredRow {
  id: string;
  exchange: string;
  routing_key: string;
  properties: OutboundProperties;
  body: Buffer;
  ordering_key: string | null;
  attempts: number;
  previous_id: string | null;
}

/**
 * The ordering keys of a claim whose rows must be checked again with a fresh snapshot (see
 * `OutboxStore.heldBack`): those whose claimed rows, in the claim's (id) order, do not form a chain, the first
 * with no pending row of the key before it and each next one right after the one before.
 *
 * A row the claim skipped breaks its key's chain: one locked by another relay, or one the key's previous holder
 * changed after the claim's snapshot (published, set to wait out a retry, parked). Where the chain holds, every
 * row of the key that was pending in the snapshot before the last claimed one is in the claim, and none was
 * parked (that would have kept the key out of the claim). A fresh snapshot could show no other: a published row
 * never becomes pending again, and a row the claim's snapshot did not see at all was written by a transaction
 * still running when the claim began, concurrent with the writes of the claimed rows, which promises no order
 * between them.
 */
export function keysToRecheck(claimed: readonly ClaimedRow[]): string[] {
  const last = new Map<string, string>();
  const broken = new Set<string>();
  for (const row of claimed) {
    if (row.orderingKey === null) continue;
    if (row.previousId !== (last.get(row.orderingKey) ?? null)) broken.add(row.orderingKey);
    last.set(row.orderingKey, row.id);
  }
  return [...broken];
}

/**
 * NOTE: the claim takes advisory locks in its scan's filter, so PostgreSQL must walk the pending index in id order
 * under the LIMIT rather than sort: a sort would take a lock for every pending key. On a table without fresh
 * statistics (a new or fast-churning outbox) the planner guesses a handful of pending rows and picks a bitmap scan
 * and a sort, so both are switched off for the claim's transaction.
 */
const CLAIM_SETTINGS = ['SET LOCAL enable_sort = off', 'SET LOCAL enable_bitmapscan = off'];

/**
 * The claim ($1 rows at most, for share $3 of $2; see OutboxStore.claim). The keys waiting out a retry or held by a
 * parked row are found once, from their small partial indexes, one branch per status: an OR of the two could only
 * be served by a bitmap scan, which is off, and would scan the whole table. A parked row of the key before a row
 * would have kept it out of the claim, so for `previous_id` pending rows suffice.
 */
const CLAIM =
  `WITH retrying AS MATERIALIZED (SELECT "ordering_key", min("id") AS first_id FROM (` +
  `SELECT "ordering_key", "id" FROM "rm_outbox" WHERE "status" = 'pending' AND "attempts" > 0 ` +
  `AND "ordering_key" IS NOT NULL AND "available_at" > now() ` +
  `UNION ALL SELECT "ordering_key", "id" FROM "rm_outbox" WHERE "status" = 'parked' ` +
  `AND ${holdsWhenParked('')}) holding GROUP BY "ordering_key") ` +
  `SELECT o."id", o."exchange", o."routing_key", o."properties", o."body", o."ordering_key", o."attempts", ` +
  `(SELECT max(e."id") FROM "rm_outbox" e WHERE e."ordering_key" = o."ordering_key" ` +
  `AND e."status" = 'pending' AND e."id" < o."id") AS previous_id ` +
  `FROM "rm_outbox" o ` +
  `WHERE o."status" = 'pending' AND o."available_at" <= now() AND (o."ordering_key" IS NULL OR CASE ` +
  `WHEN (hashtext(o."ordering_key") & 2147483647) % $2 <> $3 THEN false ` +
  `WHEN EXISTS (SELECT 1 FROM retrying r WHERE r."ordering_key" = o."ordering_key" AND r.first_id < o."id") THEN false ` +
  `ELSE pg_try_advisory_xact_lock(${ORDERING_LOCK_NAMESPACE}, hashtext(o."ordering_key")) END) ` +
  `ORDER BY o."id" LIMIT $1 FOR UPDATE OF o SKIP LOCKED`;

/**
 * Every query on the outbox table. Claiming is the heart of it: pending rows in id order, locked with
 * `FOR UPDATE SKIP LOCKED` so relays never claim a row twice, and for rows with an ordering key only while this
 * relay holds that key's advisory lock, so one relay at a time publishes a key. Rows stay locked (the claim's
 * transaction stays open) until the broker confirmed them and they are marked, so a relay that dies mid-batch
 * leaves them pending for the next one.
 */
@Injectable()
export class OutboxStore {
  constructor(@Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions) {}

  /**
   * Writes messages in the caller's transaction, with one statement (`insertStatement()`), in their order. Resolves
   * with the ids of the rows written without any key.
   */
  async insert(
    manager: EntityManager,
    messages: readonly OutboundMessage[],
    group?: string,
  ): Promise<string[]> {
    const { name, text, values } = this.insertStatement(messages, group);
    const rows = await preparedQuery(manager, name, text, values);
    return (rows as Array<{ id: string; keyless: boolean }>)
      .filter((row) => row.keyless)
      .map((row) => String(row.id));
  }

  /**
   * The statement that inserts `messages` in their order; those without an ordering key take `group` as theirs (see
   * rowValues). It returns each row's id and whether it was written without any key.
   */
  insertStatement(messages: readonly OutboundMessage[], group?: string): PreparedStatement {
    if (messages.length === 1) {
      return {
        name: 'rm_outbox_insert_returning',
        text: `${INSERT_COLUMNS} VALUES ($1, $2, $3, $4, $5, $6) ${RETURNING_KEYLESS}`,
        values: rowValues(messages[0], group),
      };
    }
    // One array per column, unnested into rows. The ORDER BY on the arrays' positions makes the ids follow the
    // messages' order, which the relay keeps per ordering key.
    const columns: unknown[][] = [[], [], [], [], [], []];
    for (const message of messages)
      rowValues(message, group).forEach((value, column) => columns[column].push(value));
    return {
      name: 'rm_outbox_insert_many_returning',
      text:
        `${INSERT_COLUMNS} SELECT m, e, r, p, b, k ` +
        `FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::bytea[], $6::text[]) ` +
        `WITH ORDINALITY AS batch (m, e, r, p, b, k, position) ORDER BY position ${RETURNING_KEYLESS}`,
      values: columns,
    };
  }

  /**
   * Gives rows the caller's transaction wrote without any key the key `group`, which its later such rows take too,
   * so that the relay sends them all in their order.
   */
  async group(manager: EntityManager, ids: readonly string[], group: string): Promise<void> {
    await preparedQuery(
      manager,
      'rm_outbox_group',
      `UPDATE "rm_outbox" SET "ordering_key" = $1 ` +
        `WHERE "id" = ANY($2::bigint[]) AND "ordering_key" IS NULL AND "status" = 'pending'`,
      [group, ids],
    );
  }

  /** Ends the claim's transaction without marking anything; its rows stay pending. */
  async rollback(runner: QueryRunner): Promise<void> {
    await runner.query('ROLLBACK');
  }

  /**
   * Opens the claim's transaction on `runner`'s connection and claims up to `limit` rows in it, in one round
   * trip: BEGIN, the claim's settings and the claim, a named prepared statement (planned once per connection
   * rather than at every round). A keyed row is claimed only when this relay gets
   * its key's advisory lock and no earlier row of that key is waiting out a retry delay or parked (a parked row
   * holds its key until it is retried or discarded); the walk is in id order,
   * so a key's rows come out in order. The keys waiting out a retry are found once per claim from the small
   * index of failed rows, not by a subquery per row. Each keyed row comes with the id of the pending row of its
   * key just before it, as the claim saw the table, for `heldBack` to tell whether its key needs a re-check.
   * With `share`, only the keys whose hash falls in that share are tried (rows without a key all are): the rounds
   * of one relay then split the keys between them and publish side by side, where each would otherwise take the
   * locks of every key in its batch and leave the others nothing to claim.
   */
  async claim(runner: QueryRunner, limit: number, share = { index: 0, of: 1 }): Promise<ClaimedRow[]> {
    const valid = [limit, share.of, share.index].every(Number.isInteger) && limit > 0 && share.index >= 0;
    if (!valid || share.index >= share.of)
      throw new Error(`invalid outbox claim: limit ${limit}, share ${share.index} of ${share.of}`);
    const rows = await beginOn<StoredRow>(runner, CLAIM_SETTINGS, {
      name: 'rm_outbox_claim',
      text: CLAIM,
      values: [limit, share.of, share.index],
    });
    return rows.map((row) => ({
      id: String(row.id),
      message: {
        exchange: row.exchange,
        routingKey: row.routing_key,
        body: row.body,
        properties: row.properties,
      },
      orderingKey: row.ordering_key,
      attempts: row.attempts,
      previousId: row.previous_id === null ? null : String(row.previous_id),
    }));
  }

  /**
   * The claimed keyed rows that must wait because an earlier row of their key is pending or parked outside this
   * claim.
   * The claim's snapshot was taken before it got the keys' advisory locks, so it may have missed a change the
   * key's previous holder committed meanwhile (a retry delay set on an earlier row, say), after which the claim
   * skipped that row and took the later ones. Such a key shows as a broken chain (see `keysToRecheck`); only
   * those keys are read again, as a new statement whose snapshot sees every such change. When every key's chain
   * holds, this costs no query.
   */
  async heldBack(runner: QueryRunner, claimed: readonly ClaimedRow[]): Promise<Set<string>> {
    const keys = keysToRecheck(claimed);
    if (keys.length === 0) return new Set();
    // Per key, the first pending or parked row this claim does not hold: every claimed row of the key after it
    // waits. One subquery per status, each on its own partial index (LEAST skips a null).
    const firsts = (await runner.query(
      `SELECT k.key, LEAST(` +
        `(SELECT min(e."id") FROM "rm_outbox" e WHERE e."ordering_key" = k.key AND e."status" = 'pending' ` +
        `AND e."id" <> ALL($2::bigint[])), ` +
        `(SELECT min(p."id") FROM "rm_outbox" p WHERE p."ordering_key" = k.key AND p."status" = 'parked' ` +
        `AND ${holdsWhenParked('p.')})` +
        `) AS first_outside FROM unnest($1::text[]) AS k(key)`,
      [keys, claimed.map((row) => row.id)],
    )) as Array<{ key: string; first_outside: string | null }>;
    const limits = new Map(
      firsts.map((row) => [row.key, row.first_outside === null ? null : BigInt(row.first_outside)]),
    );
    const held = claimed.filter((row) => {
      const limit = row.orderingKey === null ? null : limits.get(row.orderingKey);
      return limit !== null && limit !== undefined && BigInt(row.id) > limit;
    });
    return new Set(held.map((row) => row.id));
  }

  /** Records what became of claimed rows and commits the claim's transaction. */
  async complete(runner: QueryRunner, outcomes: readonly RelayOutcome[]): Promise<void> {
    if (outcomes.length === 0) {
      await runner.query('COMMIT');
      return;
    }
    if (outcomes.every((o) => o.outcome === 'published')) {
      // The ids come from the database's own bigint column; checked anyway, since they are written into the SQL
      // so that the marks and the commit travel in one round trip.
      const ids = outcomes.map((o) => o.id);
      if (!ids.every(isOutboxRowId)) throw new Error(`unexpected outbox row id in ${ids.join(',')}`);
      await runner.query(
        `UPDATE "rm_outbox" SET "status" = 'published', "published_at" = now() ` +
          `WHERE "id" = ANY('{${ids.join(',')}}'::bigint[]); COMMIT`,
      );
      return;
    }
    await runner.query(
      `UPDATE "rm_outbox" AS o SET ` +
        `"status" = CASE f.outcome WHEN 'failed' THEN 'pending' ELSE f.outcome END, ` +
        `"published_at" = CASE WHEN f.outcome = 'published' THEN now() ELSE o."published_at" END, ` +
        `"parked_at" = CASE WHEN f.outcome = 'parked' THEN now() ELSE o."parked_at" END, ` +
        `"attempts" = o."attempts" + CASE WHEN f.outcome = 'published' THEN 0 ELSE 1 END, ` +
        `"last_error" = COALESCE(f.error, o."last_error"), ` +
        `"available_at" = CASE WHEN f.outcome = 'failed' THEN now() + f.delay_ms * interval '1 millisecond' ELSE o."available_at" END ` +
        `FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[]) AS f(id, outcome, error, delay_ms) ` +
        `WHERE o."id" = f.id`,
      [
        outcomes.map((o) => o.id),
        outcomes.map((o) => o.outcome),
        outcomes.map((o) => (o.outcome === 'parked' ? o.reason : o.outcome === 'failed' ? o.error : null)),
        outcomes.map((o) => (o.outcome === 'failed' ? o.retryInMs : 0)),
      ],
    );
    await runner.query('COMMIT');
  }

  /** Pending and parked counts and the oldest pending row's age. */
  async backlog(): Promise<OutboxBacklog> {
    const [row] = await this.dataSource().query<Array<{ pending: number; oldest: number; parked: number }>>(
      `SELECT p.pending, p.oldest, (SELECT count(*) FROM "rm_outbox" WHERE "status" = 'parked')::int AS parked ` +
        `FROM (SELECT count(*)::int AS pending, ` +
        `COALESCE(EXTRACT(EPOCH FROM now() - min("created_at")), 0)::float8 AS oldest ` +
        `FROM "rm_outbox" WHERE "status" = 'pending') p`,
    );
    return { pending: row.pending, oldestAgeSeconds: Math.max(0, row.oldest), parked: row.parked };
  }

  /** Parked rows, oldest first. */
  async parked(limit: number): Promise<ParkedRow[]> {
    const rows = await this.dataSource().query<
      Array<{
        id: string;
        message_id: string;
        type: string | null;
        exchange: string;
        routing_key: string;
        last_error: string | null;
        parked_at: Date;
      }>
    >(
      `SELECT "id", "message_id", "properties"->>'type' AS type, "exchange", "routing_key", "last_error", "parked_at" ` +
        `FROM "rm_outbox" WHERE "status" = 'parked' ORDER BY "id" LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      messageId: row.message_id,
      type: row.type ?? undefined,
      exchange: row.exchange,
      routingKey: row.routing_key,
      reason: row.last_error,
      parkedAt: row.parked_at,
    }));
  }

  /** Puts parked rows back to pending (after the cause was fixed) and wakes the relays; resolves with how many moved. */
  async retryParked(ids: readonly string[]): Promise<number> {
    return (await this.resumeParked(ids)).length;
  }

  /**
   * Puts parked rows back to pending with a fresh attempt count, keeping their ids and so their place in their
   * ordering key, and wakes the relays; resolves with the rows that were parked and moved.
   */
  async resumeParked(ids: readonly string[]): Promise<MovedRow[]> {
    return this.moveParked(
      `UPDATE "rm_outbox" SET "status" = 'pending', "parked_at" = NULL, "available_at" = now(), "attempts" = 0 ` +
        `WHERE "status" = 'parked' AND "id" = ANY($1::bigint[]) RETURNING "id", "message_id"`,
      ids,
    );
  }

  /** Deletes parked rows for good, releasing the later rows of their keys, and wakes the relays. */
  async discardParked(ids: readonly string[]): Promise<MovedRow[]> {
    return this.moveParked(
      `DELETE FROM "rm_outbox" WHERE "status" = 'parked' AND "id" = ANY($1::bigint[]) RETURNING "id", "message_id"`,
      ids,
    );
  }

  /**
   * Parked rows matching the filter, in row order, up to `limit`; each with how many later rows of its ordering
   * key (pending or parked) it holds back.
   */
  async findParked(filter: ParkedRowQuery, limit: number): Promise<StoredParkedRow[]> {
    const where = [`o."status" = 'parked'`];
    const values: unknown[] = [];
    const add = (clause: (at: string) => string, value: unknown): void => {
      values.push(value);
      where.push(clause(`$${values.length}`));
    };
    if (filter.ids) {
      const rowIds = filter.ids.filter(isOutboxRowId);
      add(
        (at) =>
          `(o."id" = ANY(${at}::bigint[]) OR o."message_id"::text = ANY($${values.length + 1}::text[]))`,
        rowIds,
      );
      values.push(filter.ids.map((id) => id.toLowerCase()));
    }
    if (filter.type !== undefined) add((at) => `o."properties"->>'type' = ${at}`, filter.type);
    if (filter.orderingKey !== undefined) add((at) => `o."ordering_key" = ${at}`, filter.orderingKey);
    if (filter.since) add((at) => `o."parked_at" >= ${at}`, filter.since);
    if (filter.until) add((at) => `o."parked_at" < ${at}`, filter.until);
    if (filter.text !== undefined) {
      add(
        (at) =>
          `(strpos(lower(encode(o."body", 'escape')), lower(${at})) > 0 ` +
          `OR strpos(lower(COALESCE(o."last_error", '')), lower(${at})) > 0)`,
        filter.text,
      );
    }
    values.push(limit);
    return this.dataSource().query<StoredParkedRow[]>(
      `SELECT o."id"::text AS id, o."message_id", o."exchange", o."routing_key", o."properties", o."body", ` +
        `o."ordering_key", o."attempts", o."last_error", o."created_at", o."parked_at", ` +
        `CASE WHEN o."ordering_key" IS NULL OR NOT ${holdsWhenParked('o.')} THEN 0 ELSE (SELECT count(*) FROM "rm_outbox" l ` +
        `WHERE l."ordering_key" = o."ordering_key" AND l."status" = 'pending' AND l."id" > o."id") + ` +
        `(SELECT count(*) FROM "rm_outbox" l WHERE l."ordering_key" = o."ordering_key" AND l."status" = 'parked' ` +
        `AND l."id" > o."id") END::int ` +
        `AS holding_back FROM "rm_outbox" o WHERE ${where.join(' AND ')} ORDER BY o."id" LIMIT $${values.length}`,
      values,
    );
  }

  private async moveParked(sql: string, ids: readonly string[]): Promise<MovedRow[]> {
    const [rows] = await this.dataSource().query<[Array<{ id: string; message_id: string }>, number]>(sql, [
      ids,
    ]);
    if (rows.length > 0) await this.dataSource().query(`SELECT pg_notify('${OUTBOX_CHANNEL}', '')`);
    return rows
      .map((row) => ({ id: String(row.id), messageId: row.message_id }))
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
  }

  /**
   * Deletes up to `limit` published rows older than `retentionMs`, oldest first; resolves with how many went. The
   * batch's ids go in as an array: as `IN (SELECT …)` PostgreSQL joined them to a scan of the whole table once it
   * had statistics, at every batch.
   */
  async prunePublished(retentionMs: number, limit: number): Promise<number> {
    const [, count] = await this.dataSource().query<[unknown, number]>(
      `DELETE FROM "rm_outbox" WHERE "id" = ANY(ARRAY(SELECT "id" FROM "rm_outbox" WHERE "status" = 'published' ` +
        `AND "published_at" < now() - $1 * interval '1 millisecond' ORDER BY "published_at" LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [retentionMs, limit],
    );
    return count;
  }

  private dataSource(): DataSource {
    const dataSource = this.options.dataSource;
    if (!dataSource) throw new Error('the outbox needs the module option dataSource');
    return dataSource;
  }
}
