import type { DataSource } from 'typeorm';
import { HEADERS } from 'nestjs-reliable-messaging';
import { bucketRoutingKey, orderingBucket } from 'nestjs-reliable-messaging/operations';
import type { TestBroker } from './test-broker';

/** The table the ordering fixture app (test/fixtures/ordering-app.ts) writes each handled step to. */
export const FIXTURE_HANDLED_TABLE_SQL =
  'CREATE TABLE fixture_handled (id bigserial PRIMARY KEY, key text NOT NULL, seq int NOT NULL, instance text NOT NULL, ' +
  'queue text NOT NULL, redelivered boolean NOT NULL, started_at bigint NOT NULL, finished_at bigint NOT NULL)';

/** One handled step, in the order the handlers wrote them (row id). */
export interface HandledStep {
  key: string;
  seq: number;
  instance: string;
  queue: string;
  redelivered: boolean;
  startedAt: number;
  finishedAt: number;
}

/** Every step handled by the consumer of `queue` (its partitions included), in the order they were written. */
export async function handledSteps(dataSource: DataSource, queue: string): Promise<HandledStep[]> {
  const rows = await dataSource.query<HandledStep[]>(
    `SELECT key, seq, instance, queue, redelivered, started_at::float8 AS "startedAt", finished_at::float8 AS "finishedAt" ` +
      `FROM fixture_handled WHERE queue = $1 OR starts_with(queue, $1 || '.p') ORDER BY id`,
    [queue],
  );
  return rows;
}

/** How many steps the consumer of `queue` has handled so far. */
export async function handledCount(dataSource: DataSource, queue: string): Promise<number> {
  const [row] = await dataSource.query<Array<{ n: number }>>(
    `SELECT count(*)::int AS n FROM fixture_handled WHERE queue = $1 OR starts_with(queue, $1 || '.p')`,
    [queue],
  );
  return row.n;
}

/**
 * Publishes `perKey` steps (seq 1, 2, ...) for each key as a plain AMQP client would, interleaving the keys, on
 * one confirm channel so the broker receives each key's steps in order. Resolves once every step is confirmed;
 * rejects when any came back unroutable.
 */
export async function publishSteps(
  broker: TestBroker,
  exchange: string,
  keys: readonly string[],
  perKey: number,
): Promise<void> {
  const channel = await broker.openChannel();
  let returned = 0;
  const onReturn = (): void => {
    returned++;
  };
  channel.on('return', onReturn);
  try {
    for (let seq = 1; seq <= perKey; seq++) {
      for (const key of keys) {
        const written = channel.publish(exchange, 'fixture.step', Buffer.from(JSON.stringify({ key, seq })), {
          messageId: `${key}:${seq}`,
          type: 'fixture.step',
          contentType: 'application/json',
          persistent: true,
          mandatory: true,
          headers: { [HEADERS.idempotencyKey]: `${key}:${seq}`, [HEADERS.orderingKey]: key },
          // What a plain AMQP client adds to reach the key's partition of a consumer ordered by key.
          BCC: bucketRoutingKey(orderingBucket(key)),
        });
        if (!written) await new Promise((resolve) => channel.once('drain', resolve));
      }
    }
    await channel.waitForConfirms();
  } finally {
    channel.off('return', onReturn);
  }
  if (returned > 0) throw new Error(`${returned} step(s) came back unroutable`);
}

/** What a run's handled steps say about order and completeness. */
export interface OrderReport {
  /** Steps handled after a later step of their key had been handled. */
  violations: number;
  /** Steps handled more than once. */
  duplicates: number;
  /** Steps never handled. */
  missing: number;
  /** The most different keys whose handlers ran at the same moment. */
  maxKeysInParallel: number;
  /** From the first handler's start to the last one's end. */
  spanMs: number;
}

/** Checks the steps of `keys` × `perKey` against publish order. */
export function orderReport(
  steps: readonly HandledStep[],
  keys: readonly string[],
  perKey: number,
): OrderReport {
  const highest = new Map<string, number>();
  const seen = new Set<string>();
  let violations = 0;
  let duplicates = 0;
  for (const step of steps) {
    const id = `${step.key}:${step.seq}`;
    if (seen.has(id)) duplicates++;
    seen.add(id);
    if (step.seq < (highest.get(step.key) ?? 0)) violations++;
    highest.set(step.key, Math.max(step.seq, highest.get(step.key) ?? 0));
  }
  const starts = steps.map((s) => s.startedAt);
  const ends = steps.map((s) => s.finishedAt);
  return {
    violations,
    duplicates,
    missing: keys.length * perKey - seen.size,
    maxKeysInParallel: maxKeysInParallel(steps),
    spanMs: steps.length === 0 ? 0 : Math.max(...ends) - Math.min(...starts),
  };
}

/** Sweeps the handlers' [start, end] spans (at least 1 ms each) for the most distinct keys running at once. */
function maxKeysInParallel(steps: readonly HandledStep[]): number {
  const events = steps.flatMap((s) => [
    { at: s.startedAt, key: s.key, delta: 1 },
    { at: Math.max(s.finishedAt, s.startedAt + 1), key: s.key, delta: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  const running = new Map<string, number>();
  let max = 0;
  for (const event of events) {
    const count = (running.get(event.key) ?? 0) + event.delta;
    if (count === 0) running.delete(event.key);
    else running.set(event.key, count);
    max = Math.max(max, running.size);
  }
  return max;
}
