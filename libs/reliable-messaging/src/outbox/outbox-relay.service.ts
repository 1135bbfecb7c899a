import { Inject, Injectable, Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import type { ChannelModel } from 'amqplib';
import { ChannelChangedError, ConfirmPublisher, type InOrder } from '../amqp/confirm-publisher';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { PublisherConnection } from '../amqp/publisher-connection.service';
import { UnroutableMessageError } from '../errors/publish.error';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import type { OutboundMessage } from '../envelope/envelope';
import { OutboxListener } from './outbox-listener';
import { OutboxStore, parkedRowHolds, type ClaimedRow, type RelayOutcome } from './outbox-store.service';

/** Backoff after the relay itself failed (the database unreachable, say): first ceiling and cap. */
const FAILURE_BASE_MS = 200;
const FAILURE_CAP_MS = 10_000;
const MAX_ERROR_LENGTH = 1000;
/** How long a destination that refused a message gets each ordering key's rows one at a time. */
const STRICT_AFTER_REFUSAL_MS = 60_000;

/** Running totals of one relay, for metrics. */
export interface OutboxRelayStats {
  /** Rows published and confirmed by the broker. */
  published: number;
  /** Publish attempts that failed and were scheduled again. */
  failed: number;
  /** Rows set aside as unpublishable. */
  parked: number;
  /** Rounds that claimed at least one row. */
  batches: number;
}

type PublishResult = RelayOutcome | { id: string; outcome: 'released' };

/**
 * Relays committed outbox rows to the broker. Each round claims a batch (see OutboxStore.claim), publishes it
 * on the confirm channel, and marks the rows in the same transaction only after their confirms, so a crash
 * between confirm and mark re-sends rather than loses (consumers' inboxes drop the copy). A commit that wrote
 * rows wakes it at once: in process (OutboxCommitSignal), or by a NOTIFY from a process that doesn't relay,
 * which it LISTENs for; polling every `outbox.pollIntervalMs` is the fallback. Failed
 * publishes are retried with backoff; unroutable, oversized and exchange-less rows are parked with their
 * reason. Runs in every process with `outbox.relay` on (several relays share the work safely); MessagingLifecycle
 * starts it and, after the consumers have drained, stops it once its in-flight batch is done.
 */
@Injectable()
export class OutboxRelay {
  private readonly logger = new Logger('ReliableMessaging');
  private readonly stopping = new AbortController();
  private readonly totals: OutboxRelayStats = { published: 0, failed: 0, parked: 0, batches: 0 };
  /** Exchanges seen to exist, with the consumer connection that saw them: a new connection checks again. */
  private knownExchanges: { model?: ChannelModel; names: Set<string> } = { names: new Set() };
  private readonly idleWorkers = new Set<() => void>();
  /** Destinations (exchange and routing key) that refused a message lately, until when their keys go one row at a time. */
  private readonly refusedLately = new Map<string, number>();
  private listener?: OutboxListener;
  private loop?: Promise<void>;
  /** Workers woken while busy: each goes round once more before it idles. */
  private readonly pendingWake = new Set<number>();

  constructor(
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly store: OutboxStore,
    private readonly confirms: ConfirmPublisher,
    private readonly consumerConnection: ConsumerConnection,
    private readonly publisherConnection: PublisherConnection,
  ) {}

  /** True when this process relays: a DataSource is configured and `outbox.relay` is on. */
  get enabled(): boolean {
    return this.options.dataSource !== undefined && this.options.outbox.relay;
  }

  /** Totals since start. */
  get stats(): Readonly<OutboxRelayStats> {
    return { ...this.totals };
  }

  /**
   * Starts listening for commits and `outbox.concurrency` workers; does nothing unless `enabled`. Call it once the
   * topology is declared, so the first rows published find their exchange. The workers wait while the publisher
   * connection is down or blocked.
   */
  start(): void {
    const dataSource = this.options.dataSource;
    if (!dataSource || !this.enabled || this.loop || this.stopping.signal.aborted) return;
    this.listener = new OutboxListener(dataSource, () => this.wake(), this.logger);
    this.listener.start();
    const { concurrency } = this.options.outbox;
    const workers = Array.from({ length: concurrency }, (_, index) =>
      this.work(dataSource, { index, of: concurrency }),
    );
    this.loop = Promise.all(workers).then(() => undefined);
  }

  /**
   * Makes the relay look for rows now instead of at its next poll: every idle worker starts a round, and every
   * busy one goes again. Every worker, because each claims only its share of the ordering keys: the one woken
   * alone could find nothing of its share while the rows committed wait for another worker's poll.
   */
  wake(): void {
    for (let index = 0; index < this.options.outbox.concurrency; index++) this.pendingWake.add(index);
    for (const resume of [...this.idleWorkers]) resume();
  }

  /** Stops claiming, lets the in-flight batch finish its confirms and marks (up to `deadline`), stops listening. */
  async stop(deadline: number): Promise<void> {
    this.stopping.abort();
    if (!this.loop) return;
    for (const resume of [...this.idleWorkers]) resume();
    const timeout = new AbortController();
    await Promise.race([this.loop, sleep(Math.max(0, deadline - Date.now()), timeout.signal)]);
    timeout.abort();
    await this.listener?.stop();
    const { published, parked } = this.totals;
    this.logger.log(`outbox relay stopped: ${published} message(s) published, ${parked} parked since start`);
  }

  /**
   * One of the relay's `outbox.concurrency` workers: round after round while there is work, idle otherwise. While
   * one worker waits for its confirms another can claim, so rows committed meanwhile need not wait for it. Their
   * claims never overlap (SKIP LOCKED, and each ordering key's advisory lock); each takes the ordering keys of its
   * `share` of them, so that one round's keys do not leave the others idle.
   */
  private async work(dataSource: DataSource, share: { index: number; of: number }): Promise<void> {
    const { batchSize, pollIntervalMs } = this.options.outbox;
    for (let failures = 0; !this.stopping.signal.aborted;) {
      if (!this.confirms.isReady || this.publisherConnection.isBlocked) {
        await this.idle(pollIntervalMs);
        continue;
      }
      this.pendingWake.delete(share.index);
      let round: { claimed: number; settled: number };
      try {
        round = await this.relayBatch(dataSource, batchSize, share);
        failures = 0;
      } catch (error) {
        failures++;
        const delay = fullJitterDelay(failures, FAILURE_BASE_MS, FAILURE_CAP_MS);
        this.logger.warn(
          `outbox relay: a round failed (${errorMessage(error)}); trying again in ${delay} ms`,
        );
        await sleep(delay, this.stopping.signal);
        continue;
      }
      if (round.claimed === batchSize && round.settled > 0) {
        // A full batch: more rows are likely waiting, enough for another worker too.
        this.wakeOne();
        continue;
      }
      if (this.pendingWake.has(share.index)) continue;
      await this.idle(pollIntervalMs);
    }
  }

  /**
   * One round: claim (opening the transaction), re-check the keys the claim may have read stale (see
   * OutboxStore.heldBack), publish with confirms, mark and commit. Two round trips to the database, three when
   * a key needs the re-check. Resolves with how many rows it claimed and settled.
   */
  private async relayBatch(
    dataSource: DataSource,
    limit: number,
    share: { index: number; of: number },
  ): Promise<{ claimed: number; settled: number }> {
    const runner = dataSource.createQueryRunner();
    try {
      const claimed = await this.store.claim(runner, limit, share);
      if (claimed.length === 0) {
        await this.store.complete(runner, []);
        return { claimed: 0, settled: 0 };
      }
      const heldBack = await this.store.heldBack(runner, claimed);
      const results = await this.publishAll(claimed.filter((row) => !heldBack.has(row.id)));
      const outcomes = results.filter((result): result is RelayOutcome => result.outcome !== 'released');
      await this.store.complete(runner, outcomes);
      this.count(outcomes);
      return { claimed: claimed.length, settled: outcomes.length };
    } catch (error) {
      // Outside a transaction (the commit failed) PostgreSQL only warns; on a dead connection this fails too.
      await this.store.rollback(runner).catch(() => undefined);
      throw error;
    } finally {
      if (!runner.isReleased) await runner.release().catch(() => undefined);
    }
  }

  /**
   * Publishes a claim and sorts out what became of each row. Rows without an ordering key go out all at once,
   * pipelined on the confirm channel; each key's rows go in order (see publishInOrder), the keys in parallel.
   */
  private async publishAll(rows: readonly ClaimedRow[]): Promise<PublishResult[]> {
    const missing = new Set<string>();
    for (const exchange of new Set(rows.map((row) => row.message.exchange))) {
      if (!(await this.exchangeExists(exchange))) missing.add(exchange);
    }
    const keyed = new Map<string, ClaimedRow[]>();
    const work: Array<Promise<PublishResult[]>> = [];
    for (const row of rows) {
      if (row.orderingKey === null) {
        work.push(this.publishOne(row, missing).then((result) => [result]));
      } else {
        const chain = keyed.get(row.orderingKey);
        if (chain) chain.push(row);
        else keyed.set(row.orderingKey, [row]);
      }
    }
    for (const chain of keyed.values()) work.push(this.publishInOrder(chain, missing));
    return (await Promise.all(work)).flat();
  }

  /**
   * Publishes one ordering key's claimed rows in id order on one channel, which the broker keeps in order: each
   * is written once the previous one is, up to `outbox.inFlightPerKey` awaiting their confirms. One at a time
   * while a row of the key is being retried, or its destination refused a message in the last minute: a full
   * queue with reject-publish may refuse one message and take the next once a consumer made room. Before a row
   * for another exchange or routing key, which the broker may route differently, the confirms so far are
   * awaited. The first row not confirmed
   * (refused, unroutable, parked, its channel lost) stops the key: nothing more of it is sent, and the rows
   * after it are released untouched, even those the broker confirmed meanwhile, so the next claim holds them
   * back until that row goes and then sends them again after it. A row confirmed after an earlier one was
   * refused is already in the queue ahead of it; that is logged.
   */
  private async publishInOrder(
    chain: readonly ClaimedRow[],
    missing: ReadonlySet<string>,
  ): Promise<PublishResult[]> {
    const window = chain.some((row) => row.attempts > 0 || this.isRefusing(row))
      ? 1
      : this.options.outbox.inFlightPerKey;
    // A parked row stops a user's key; a transaction's keyless rows go on past it (see TRANSACTION_GROUP_PREFIX).
    const holds = parkedRowHolds(chain[0].orderingKey);
    const stops = (result: PublishResult): boolean =>
      result.outcome !== 'published' && (holds || result.outcome !== 'parked');
    const sent: Array<Promise<PublishResult>> = [];
    let settled = 0;
    let stopped = false;
    const order: InOrder = { written: () => undefined };
    for (const [index, row] of chain.entries()) {
      const previous = chain[index - 1]?.message;
      const rerouted =
        previous !== undefined &&
        (previous.exchange !== row.message.exchange || previous.routingKey !== row.message.routingKey);
      while (!stopped && sent.length - settled > (rerouted ? 0 : window - 1)) await sent[settled++];
      if (stopped) break;
      // Mostly the confirm publisher writes the row before publishOne() returns; only when it waits (a blocked
      // connection, a full socket buffer, a channel being opened) is the write awaited, or the row's outcome.
      let written = false;
      let wake: (() => void) | undefined;
      order.written = (channel) => {
        order.channel = channel;
        written = true;
        wake?.();
      };
      const outcome = this.publishOne(row, missing, order);
      void outcome.then((result) => {
        if (stops(result)) stopped = true;
      });
      sent.push(outcome);
      if (!written) await Promise.race([new Promise<void>((resolve) => (wake = resolve)), outcome]);
    }
    const results = await Promise.all(sent);
    const stop = results.findIndex(stops);
    if (stop < 0) return results;
    const overtaking = results.slice(stop + 1).filter((result) => result.outcome === 'published');
    if (overtaking.length > 0) {
      this.logger.warn(
        `outbox relay: ordering key '${chain[0].orderingKey}': outbox row ${results[stop].id} was not confirmed ` +
          `(${results[stop].outcome}) but ${overtaking.length} later row(s) of its key were ` +
          `(${overtaking.map((result) => result.id).join(', ')}), so consumers may get them first; ` +
          'they are sent again after it',
      );
    }
    return [
      ...results.slice(0, stop + 1),
      ...chain.slice(stop + 1).map((row): PublishResult => ({ id: row.id, outcome: 'released' })),
    ];
  }

  private async publishOne(
    row: ClaimedRow,
    missing: ReadonlySet<string>,
    order?: InOrder,
  ): Promise<PublishResult> {
    const { message } = row;
    if (message.body.length > this.options.maxPayloadBytes) {
      return this.parked(
        row,
        `payload-too-large: ${message.body.length} bytes, above maxPayloadBytes ${this.options.maxPayloadBytes}`,
      );
    }
    if (missing.has(message.exchange)) {
      return this.parked(row, `exchange-not-found: exchange '${message.exchange}' does not exist`);
    }
    try {
      await this.confirms.publish(message, undefined, order);
      return { id: row.id, outcome: 'published' };
    } catch (error) {
      if (error instanceof UnroutableMessageError) return this.parked(row, `unroutable: ${error.message}`);
      // The channel or connection went away, or was replaced within a key's sequence: the row was not refused,
      // so it goes again, without counting as a failed attempt.
      if (error instanceof ChannelChangedError || !this.confirms.hasChannel) {
        return { id: row.id, outcome: 'released' };
      }
      this.refusedLately.set(destination(message), Date.now() + STRICT_AFTER_REFUSAL_MS);
      const { initialMs, maxMs } = this.options.outbox.retryDelay;
      return {
        id: row.id,
        outcome: 'failed',
        error: errorMessage(error).slice(0, MAX_ERROR_LENGTH),
        retryInMs: Math.max(1, fullJitterDelay(row.attempts + 1, initialMs, maxMs)),
      };
    }
  }

  /** Whether the row's destination refused a message lately (a full queue with reject-publish, say). */
  private isRefusing(row: ClaimedRow): boolean {
    const key = destination(row.message);
    const until = this.refusedLately.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.refusedLately.delete(key);
    return false;
  }

  private parked(row: ClaimedRow, reason: string): RelayOutcome {
    this.logger.error(
      `outbox relay: message ${row.message.properties.messageId} (outbox row ${row.id}) parked, it can never be published: ${reason}`,
    );
    return { id: row.id, outcome: 'parked', reason: reason.slice(0, MAX_ERROR_LENGTH) };
  }

  /**
   * Whether the exchange exists, checked once per consumer connection on a channel of its own: publishing to a
   * missing exchange would close the shared confirm channel and fail every other message in flight with it.
   * The check runs on the consumer connection, which the broker does not block during an alarm.
   */
  private async exchangeExists(exchange: string): Promise<boolean> {
    const model = this.consumerConnection.model;
    if (!model) return true;
    if (this.knownExchanges.model !== model) this.knownExchanges = { model, names: new Set() };
    if (exchange === '' || this.knownExchanges.names.has(exchange)) return true;
    const channel = await model.createChannel();
    channel.on('error', () => undefined);
    try {
      await channel.checkExchange(exchange);
      this.knownExchanges.names.add(exchange);
      return true;
    } catch (error) {
      if (/NOT_FOUND/.test(errorMessage(error))) return false;
      throw error;
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  private count(outcomes: readonly RelayOutcome[]): void {
    this.totals.batches++;
    for (const { outcome } of outcomes) this.totals[outcome]++;
  }

  /** Waits `ms`, or less when woken or stopping. */
  private idle(ms: number): Promise<void> {
    if (this.stopping.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const resume = (): void => {
        clearTimeout(timer);
        this.idleWorkers.delete(resume);
        resolve();
      };
      const timer = setTimeout(resume, ms);
      this.idleWorkers.add(resume);
    });
  }

  /** Resumes one idle worker; false when none is idle. */
  private wakeOne(): boolean {
    const [resume] = this.idleWorkers;
    resume?.();
    return resume !== undefined;
  }
}

function destination(message: OutboundMessage): string {
  return `${message.exchange}\u0000${message.routingKey}`;
}
