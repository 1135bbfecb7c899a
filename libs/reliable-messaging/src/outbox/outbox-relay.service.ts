import { Inject, Injectable, Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging-module-definition';
import type { ResolvedMessagingOptions } from '../reliable-messaging.options';
import type { ChannelModel } from 'amqplib';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { ConsumerConnection } from '../amqp/consumer-connection.service';
import { PublisherConnection } from '../amqp/publisher-connection.service';
import { UnroutableMessageError } from '../errors/publish.error';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { OutboxListener } from './outbox-listener';
import { OutboxStore, type ClaimedRow, type RelayOutcome } from './outbox-store.service';

/** Backoff after the relay itself failed (the database unreachable, say): first ceiling and cap. */
const FAILURE_BASE_MS = 200;
const FAILURE_CAP_MS = 10_000;
const MAX_ERROR_LENGTH = 1000;

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
  private listener?: OutboxListener;
  private loop?: Promise<void>;
  private pendingWake = false;

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
    const workers = Array.from({ length: this.options.outbox.concurrency }, () => this.work(dataSource));
    this.loop = Promise.all(workers).then(() => undefined);
  }

  /** Makes the relay look for rows now instead of at its next poll: an idle round starts, or a busy one goes again. */
  wake(): void {
    if (!this.wakeOne()) this.pendingWake = true;
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
   * claims never overlap (SKIP LOCKED, and each ordering key's advisory lock).
   */
  private async work(dataSource: DataSource): Promise<void> {
    const { batchSize, pollIntervalMs } = this.options.outbox;
    for (let failures = 0; !this.stopping.signal.aborted;) {
      if (!this.confirms.isReady || this.publisherConnection.isBlocked) {
        await this.idle(pollIntervalMs);
        continue;
      }
      this.pendingWake = false;
      let round: { claimed: number; settled: number };
      try {
        round = await this.relayBatch(dataSource, batchSize);
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
      if (this.pendingWake) continue;
      await this.idle(pollIntervalMs);
    }
  }

  /** One round: claim, publish with confirms, mark, commit. Resolves with how many rows it claimed and settled. */
  private async relayBatch(
    dataSource: DataSource,
    limit: number,
  ): Promise<{ claimed: number; settled: number }> {
    const runner = dataSource.createQueryRunner();
    try {
      await this.store.begin(runner);
      const claimed = await this.store.claim(runner, limit);
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
   * pipelined on the confirm channel. A key's rows go one at a time, each after the previous one's confirm, so
   * a refusal, a park or a lost confirm can never let a later message of the key overtake an earlier one: after
   * a failure or a park the key's remaining rows are released untouched, and the claim holds them back until the failed
   * row goes. Different keys proceed in parallel.
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

  private async publishInOrder(
    chain: readonly ClaimedRow[],
    missing: ReadonlySet<string>,
  ): Promise<PublishResult[]> {
    const results: PublishResult[] = [];
    for (const [index, row] of chain.entries()) {
      const result = await this.publishOne(row, missing);
      results.push(result);
      // A parked row holds its key too: the rows after it wait until it is retried or discarded.
      if (result.outcome !== 'published') {
        for (const rest of chain.slice(index + 1)) results.push({ id: rest.id, outcome: 'released' });
        break;
      }
    }
    return results;
  }

  private async publishOne(row: ClaimedRow, missing: ReadonlySet<string>): Promise<PublishResult> {
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
      await this.confirms.publish(message);
      return { id: row.id, outcome: 'published' };
    } catch (error) {
      if (error instanceof UnroutableMessageError) return this.parked(row, `unroutable: ${error.message}`);
      // The channel or connection went away: the row was not refused, so it goes again once reconnected,
      // without counting as a failed attempt.
      if (!this.confirms.hasChannel) return { id: row.id, outcome: 'released' };
      const { initialMs, maxMs } = this.options.outbox.retryDelay;
      return {
        id: row.id,
        outcome: 'failed',
        error: errorMessage(error).slice(0, MAX_ERROR_LENGTH),
        retryInMs: Math.max(1, fullJitterDelay(row.attempts + 1, initialMs, maxMs)),
      };
    }
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
