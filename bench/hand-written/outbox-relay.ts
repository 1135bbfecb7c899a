import type { ChannelModel, ConfirmChannel, Options } from 'amqplib';
import type { Pool } from 'pg';
import { inTransaction } from './in-transaction';

/** Namespace of the relay's advisory locks on ordering keys, apart from the module's. */
const KEY_LOCK_NAMESPACE = 0x48574b59;
/** Backoff after a round that failed or left rows unconfirmed: first delay and cap. */
const RETRY_BASE_MS = 100;
const RETRY_CAP_MS = 5_000;

/** A claimed outbox row. */
export interface OutboxRow {
  id: string;
  message_id: string;
  exchange: string;
  routing_key: string;
  properties: Options.Publish;
  body: Buffer;
  ordering_key: string | null;
}

/** How an {@link OutboxRelay} is set up. */
export interface OutboxRelayOptions {
  pool: Pool;
  connection: ChannelModel;
  /** Rows per claim. */
  batchSize: number;
  /** Rounds at once, each with its share of the ordering keys. */
  workers: number;
  /** How long an idle worker waits before it looks again, unless woken. */
  pollMs: number;
}

/**
 * A worker's claim: the oldest pending rows, skipping rows another round holds. A row with an ordering key is
 * taken only when its key falls in this worker's share ($2, $3) and this transaction gets the key's advisory
 * lock, held until commit: no two rounds, here or in another process, publish one key's rows at once, and a
 * round that meets a key's rows takes them in id order.
 */
const CLAIM =
  'SELECT id, message_id, exchange, routing_key, properties, body, ordering_key FROM hw_outbox ' +
  `WHERE status = 'pending' AND (ordering_key IS NULL OR ` +
  '((hashtext(ordering_key) & 2147483647) % $2 = $3 ' +
  `AND pg_try_advisory_xact_lock(${KEY_LOCK_NAMESPACE}, hashtext(ordering_key)))) ` +
  'ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED';

const MARK = `UPDATE hw_outbox SET status = 'published', published_at = now() WHERE id = ANY($1::bigint[])`;

/**
 * The outbox relay a careful team writes by hand: each round claims a batch in a transaction, publishes it on a
 * confirm channel (mandatory, persistent as written), marks the confirmed rows published and commits. Nothing is
 * marked before the broker confirmed it, so a crash anywhere re-sends rather than loses (consumers' inboxes
 * drop the copy). A key's rows go out in id order on one channel, which the broker keeps; when one of them is
 * not confirmed, the key's later rows are not marked either, so they go again after it.
 */
export class OutboxRelay {
  /** Rows marked published since start. */
  published = 0;
  private stopped = false;
  private readonly waiting = new Set<() => void>();
  /** Workers woken while in a round: each goes round once more before it idles, so no commit waits for a poll. */
  private readonly wokenWhileBusy = new Set<number>();
  private loop?: Promise<void>;
  private channel?: Promise<ConfirmChannel>;
  /** Message ids the broker returned as unroutable since they were published. */
  private readonly returned = new Set<string>();

  constructor(private readonly options: OutboxRelayOptions) {}

  start(): void {
    const { workers } = this.options;
    this.loop = Promise.all(Array.from({ length: workers }, (_, index) => this.work(index))).then(
      () => undefined,
    );
  }

  /** Makes every idle worker look for rows now: called after a transaction that wrote rows committed. */
  wake(): void {
    for (let index = 0; index < this.options.workers; index++) this.wokenWhileBusy.add(index);
    for (const resume of [...this.waiting]) resume();
  }

  /** Lets the rounds in flight finish, then closes the channel. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loop;
    const channel = await this.channel?.catch(() => undefined);
    await channel?.close().catch(() => undefined);
  }

  private async work(index: number): Promise<void> {
    for (let failures = 0; !this.stopped;) {
      let round: { claimed: number; confirmed: number };
      this.wokenWhileBusy.delete(index);
      try {
        round = await this.round(index);
      } catch (error) {
        console.error(`hand-written relay: a round failed: ${String(error)}`);
        round = { claimed: 1, confirmed: 0 };
      }
      if (round.claimed > round.confirmed) {
        failures++;
        await this.idle(Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** failures));
        continue;
      }
      failures = 0;
      if (round.claimed < this.options.batchSize && !this.wokenWhileBusy.has(index)) {
        await this.idle(this.options.pollMs);
      }
    }
  }

  private idle(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const resume = (): void => {
        clearTimeout(timer);
        this.waiting.delete(resume);
        resolve();
      };
      const timer = setTimeout(resume, ms);
      this.waiting.add(resume);
    });
  }

  /** One claim, publish, mark and commit; resolves with how many rows it claimed and marked. */
  private async round(index: number): Promise<{ claimed: number; confirmed: number }> {
    const round = await inTransaction(this.options.pool, async (client) => {
      const { rows } = await client.query<OutboxRow>({
        name: 'hw_outbox_claim',
        text: CLAIM,
        values: [this.options.batchSize, this.options.workers, index],
      });
      const confirmed = rows.length > 0 ? await this.publishAll(rows) : [];
      const marked = markable(rows, new Set(confirmed));
      if (marked.length > 0) await client.query({ name: 'hw_outbox_mark', text: MARK, values: [marked] });
      return { claimed: rows.length, confirmed: marked.length };
    });
    this.published += round.confirmed;
    return round;
  }

  /** Publishes the rows in id order on the confirm channel; resolves with the ids the broker confirmed. */
  private async publishAll(rows: readonly OutboxRow[]): Promise<string[]> {
    const channel = await this.confirmChannel();
    const confirms: Array<Promise<string | undefined>> = [];
    for (const row of rows) {
      // The message id tells a basic.return (which carries no delivery tag) to its row.
      const messageId = row.properties.messageId ?? row.message_id;
      let written = true;
      confirms.push(
        new Promise<string | undefined>((resolve) => {
          written = channel.publish(
            row.exchange,
            row.routing_key,
            row.body,
            { ...row.properties, messageId, mandatory: true },
            (error: unknown) => {
              // The broker sends basic.return before the basic.ack of an unroutable message.
              const unroutable = this.returned.delete(messageId);
              resolve(error || unroutable ? undefined : row.id);
            },
          );
        }),
      );
      if (!written) await drained(channel);
    }
    const results = await Promise.all(confirms);
    return results.filter((id): id is string => id !== undefined);
  }

  private confirmChannel(): Promise<ConfirmChannel> {
    this.channel ??= this.options.connection.createConfirmChannel().then((channel) => {
      channel.on('return', (message: { properties: { messageId?: string } }) => {
        if (message.properties.messageId) this.returned.add(message.properties.messageId);
      });
      channel.on('error', (error: Error) => console.error(`hand-written relay channel: ${error.message}`));
      // A closed channel fails its pending confirms; the next round opens another.
      channel.on('close', () => (this.channel = undefined));
      return channel;
    });
    return this.channel;
  }
}

/** Resolves when the channel can take writes again, or closed (its pending confirms then fail). */
function drained(channel: ConfirmChannel): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      channel.off('drain', done);
      channel.off('close', done);
      resolve();
    };
    channel.once('drain', done);
    channel.once('close', done);
  });
}

/**
 * The ids a round may mark published: every confirmed row without a key, and of each key the confirmed rows
 * before its first unconfirmed one (the rest go again after it, so the key keeps its order).
 */
export function markable(
  rows: readonly Pick<OutboxRow, 'id' | 'ordering_key'>[],
  confirmed: ReadonlySet<string>,
): string[] {
  const broken = new Set<string>();
  const marked: string[] = [];
  for (const row of rows) {
    const key = row.ordering_key;
    if (key !== null && broken.has(key)) continue;
    if (confirmed.has(row.id)) marked.push(row.id);
    else if (key !== null) broken.add(key);
  }
  return marked;
}
