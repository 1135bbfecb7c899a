import type { EntityManager } from 'typeorm';
import { preparedCommand, preparedQuery } from '../database/prepared-query';

/** An instance's status: `active` until a step completes it, then `completed` until pruned. */
export type SagaStatus = 'active' | 'completed';

/** A timeout an instance waits for: a scheduled message a step asked for, not yet due. */
export interface SagaTimeout {
  /** The scheduled message's id: what cancels it, and what tells it apart when it arrives. */
  readonly messageId: string;
  /** When it is due, as the step asked (ISO 8601). */
  readonly dueAt: string;
}

/** What a step learns of one instance's row before it runs. */
export interface StoredInstance {
  /** The row's id (a bigint, as text). */
  readonly id: string;
  readonly status: SagaStatus;
  readonly state: object;
  readonly version: number;
  readonly timeouts: SagaTimeout[];
}

/** What one message did to an instance, as its history records it. */
export type SagaOutcome = 'started' | 'continued' | 'completed' | 'ignored';

/** What a step writes: the instance's new state and status, and the message that made them, for the history. */
export interface StepWrite {
  readonly saga: string;
  readonly correlationKey: string;
  /** The version the step read; 0 to start the instance. */
  readonly expectedVersion: number;
  /** The row's id, for a step on an existing instance. */
  readonly id?: string;
  /** The state as JSON text, checked (saga-state.ts). */
  readonly state: string;
  /** The timeouts it waits for after this step. */
  readonly timeouts: readonly SagaTimeout[];
  readonly status: SagaStatus;
  readonly outcome: SagaOutcome;
  readonly messageId: string;
  readonly messageType: string;
  readonly step: string;
}

const LOAD_TEXT =
  `SELECT "id"::text AS "id", "status", "state", "version", "timeouts" FROM "rm_saga" ` +
  `WHERE "saga" = $1 AND "correlation_key" = $2`;

// NOTE: a re-run after a lost race locks the row as it reads it. Without the lock, steps racing for one hot instance
// play a lottery each round (one of k wins), and one step could lose dozens of times in a row: measured with 8
// steps at once on one instance, one of 40 messages lost 25 races. With it, a step that lost once wins its re-run.
const LOAD_FOR_UPDATE_TEXT = `${LOAD_TEXT} FOR UPDATE`;

const HISTORY_INSERT =
  `INSERT INTO "rm_saga_history" ("saga_id", "version", "message_id", "message_type", "step", "outcome") ` +
  `SELECT "id", "version", $5, $6, $7, $8 FROM written`;

// NOTE: a unique violation would abort the transaction, so the start inserts with ON CONFLICT DO NOTHING and reads
// "nothing inserted" as the conflict: the transaction stays usable for the rollback the re-run begins with.
const START_TEXT =
  `WITH written AS (INSERT INTO "rm_saga" ("saga", "correlation_key", "status", "state", "version", "completed_at", "timeouts") ` +
  `VALUES ($1, $2, $4::text, $3::jsonb, 1, CASE WHEN $4::text = 'completed' THEN now() END, $9::jsonb) ` +
  `ON CONFLICT ("saga", "correlation_key") DO NOTHING RETURNING "id", "version") ` +
  HISTORY_INSERT;

// Under READ COMMITTED an UPDATE that meets a row another transaction changed waits for it, then checks the WHERE
// against the row as committed: a version that moved on matches nothing. So of two steps that read one version,
// exactly one writes, whatever their timing.
const CONTINUE_TEXT =
  `WITH written AS (UPDATE "rm_saga" SET "state" = $3::jsonb, "status" = $4::text, "version" = "version" + 1, ` +
  `"updated_at" = now(), "completed_at" = CASE WHEN $4::text = 'completed' THEN now() END, "timeouts" = $9::jsonb ` +
  `WHERE "id" = $1::bigint AND "version" = $2::integer RETURNING "id", "version") ` +
  HISTORY_INSERT;

const IGNORED_TEXT =
  `INSERT INTO "rm_saga_history" ("saga_id", "version", "message_id", "message_type", "step", "outcome") ` +
  `VALUES ($1::bigint, $2, $3, $4, $5, 'ignored')`;

/**
 * The instance of `saga` with `correlationKey`, read in the step's transaction: without a lock (the write checks
 * the version), or with `lock` (a re-run after a lost race) FOR UPDATE, held until the step commits.
 */
export async function loadInstance(
  manager: EntityManager,
  saga: string,
  correlationKey: string,
  lock = false,
): Promise<StoredInstance | undefined> {
  const rows = (await (lock
    ? preparedQuery(manager, 'rm_saga_load_locked', LOAD_FOR_UPDATE_TEXT, [saga, correlationKey])
    : preparedQuery(manager, 'rm_saga_load', LOAD_TEXT, [saga, correlationKey]))) as StoredInstance[];
  return rows[0];
}

/**
 * Writes what a step left, with its history row, in the step's transaction: inserts the instance when the step
 * started it, else updates it if it still has the version the step read. False when another step won the race
 * (it started the instance, or changed it, first); nothing was written then.
 */
export async function writeStep(manager: EntityManager, write: StepWrite): Promise<boolean> {
  // $5 to $8 the history row, $9 the timeouts.
  const rest = [
    write.messageId,
    write.messageType,
    write.step,
    write.outcome,
    JSON.stringify(write.timeouts),
  ];
  const statement =
    write.expectedVersion === 0
      ? {
          name: 'rm_saga_start',
          text: START_TEXT,
          values: [write.saga, write.correlationKey, write.state, write.status, ...rest],
        }
      : {
          name: 'rm_saga_continue',
          text: CONTINUE_TEXT,
          values: [write.id, write.expectedVersion, write.state, write.status, ...rest],
        };
  return (await preparedCommand(manager, statement)) === 1;
}

/** Records in an instance's history a message its step ignored (the instance had completed). */
export async function recordIgnored(
  manager: EntityManager,
  instance: StoredInstance,
  message: { messageId: string; messageType: string; step: string },
): Promise<void> {
  await preparedCommand(manager, {
    name: 'rm_saga_ignored',
    text: IGNORED_TEXT,
    values: [instance.id, instance.version, message.messageId, message.messageType, message.step],
  });
}

/**
 * Where the saga stage keeps instances: the database (`databaseSagaStore`, in the step's transaction, the inbox's)
 * or this process's memory for tests without a database (MemorySagaStore, with `inbox.store: 'memory'`). Both
 * keep one contract: `write()` starts an instance only if none has its key and continues one only if it still has
 * the version the step read, else resolves false and writes nothing.
 */
export interface SagaStore {
  /**
   * False for a store without transactions (the memory store): a step that fails has its work undone by the saga
   * stage itself (the timeouts it asked for are cancelled), as a rollback would in the database.
   */
  readonly transactional: boolean;
  load(
    manager: EntityManager | undefined,
    saga: string,
    correlationKey: string,
    lock: boolean,
  ): Promise<StoredInstance | undefined>;
  write(manager: EntityManager | undefined, write: StepWrite): Promise<boolean>;
  recordIgnored(
    manager: EntityManager | undefined,
    instance: StoredInstance,
    message: { messageId: string; messageType: string; step: string },
  ): Promise<void>;
}

/** The instances in `rm_saga`, written in the step's transaction (the inbox's, `delivery.manager`). */
export const databaseSagaStore: SagaStore = {
  transactional: true,
  load: (manager, saga, key, lock) => loadInstance(inTransaction(manager), saga, key, lock),
  write: (manager, write) => writeStep(inTransaction(manager), write),
  recordIgnored: (manager, instance, message) => recordIgnored(inTransaction(manager), instance, message),
};

function inTransaction(manager: EntityManager | undefined): EntityManager {
  if (!manager) throw new Error('the saga stage runs inside the inbox transaction, after decoding');
  return manager;
}
