import { randomUUID } from 'node:crypto';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { MessageProperties } from 'amqplib';
import { getMessageDefinition } from '../decorators/message-type.decorator';
import { EnvelopeFactory } from '../envelope/envelope.factory';
import { ClaimCheckWriter } from '../claim-check/claim-check-writer.service';
import { InboxStats, type DuplicateDelivery } from '../inbox/inbox-stats.service';
import { MemoryInbox } from '../inbox/memory-inbox';
import { MessagePublisher, type PublishReceipt } from '../publishing/message-publisher.service';
import type { PublishOptions } from '../publishing/publish-options';
import { RESOLVED_MESSAGING_OPTIONS } from '../reliable-messaging.constants';
import { DEAD_LETTER_HEADERS, HEADERS } from '../reliable-messaging.constants';
import type { ResolvedMessagingOptions } from '../options/reliable-messaging.options';
import { delayOfRoutingKey } from '../retry/delay-levels';
import {
  bodyOf,
  listOf,
  type ConsumedRecord,
  type DeliveryOutcome,
  type HarnessRecords,
  type PublishedRecord,
  type RecordKind,
} from './harness-records';
import { InMemoryBroker, type BrokerEvent, type StoredMessage } from './in-memory-broker/in-memory-broker';
import { IN_MEMORY_CONNECTIONS, type InMemoryConnections } from './in-memory-connections';
import { MemoryScheduledMessages } from './memory-scheduled-messages';
import { ConfirmPublisher } from '../amqp/confirm-publisher';
import { MemorySagaStore } from '../saga/memory-saga-store';
import { SagaInstances } from '../saga/saga-instances.service';

/** How long `deliver()`, `waitFor()` and `advance()` wait by default before failing. */
const DEFAULT_WAIT_MS = 5_000;

/** A delivery between the broker handing it to a consumer and the consumer settling it. */
interface Pending {
  readonly queue: string;
  readonly message: StoredMessage;
  /** What the module published for it before settling: its retry, return or dead letter. */
  republished?: Extract<BrokerEvent, { kind: 'published' }>;
  duplicate?: DuplicateDelivery;
}

/** The harness's clock: the broker's (retries in the delay levels) and the scheduled messages' (saga timeouts). */
export interface HarnessClock {
  /** The test's time: the app's clock plus everything advanced so far. */
  now(): Date;
  /**
   * Moves time on by `ms`. Every scheduled message (a saga's timeout, a `publish()` with `delayMs` or `deliverAt`)
   * due by then is sent as its time comes, the first due first, and every retry comes back as its delay passes;
   * each is handled (and settled) before the clock moves past the next, so a message scheduled by a handler on
   * the way, and due in the window, goes too. Resolves once every delivery it set off has been settled.
   */
  advance(ms: number, options?: { timeoutMs?: number }): Promise<void>;
  /** As `advance()`, to the moment `at`; a moment already passed moves nothing, and sends what is due. */
  advanceTo(at: Date, options?: { timeoutMs?: number }): Promise<void>;
}

interface Waiter {
  readonly kind: RecordKind;
  readonly matches: (record: never) => boolean;
  readonly resolve: (record: never) => void;
}

/**
 * Drives and observes the module on the in-memory broker (ReliableMessagingTestingModule): publish or deliver a
 * message, read how each delivery ended, move the broker's clock so retries come back at once. Every delivery
 * runs the consumer's whole pipeline, as in production: decode and validation, the inbox, retries and dead
 * letters, and the handler's own guards, interceptors, pipes and filters.
 *
 * @example
 * const outcome = await harness.deliver('billing.payment', OrderPlaced.of({ orderId }));
 * expect(outcome).toEqual({ kind: 'acked' });
 */
@Injectable()
export class MessagingHarness implements OnModuleInit, OnModuleDestroy {
  private readonly records: { [K in RecordKind]: HarnessRecords[K][] } = {
    published: [],
    consumed: [],
    retried: [],
    deadLettered: [],
    duplicates: [],
  };
  private readonly pending = new Map<StoredMessage, Pending>();
  private readonly waiters = new Set<Waiter>();
  /** Message ids `deliver()` put straight into a queue: not the app's publishes. */
  private readonly injected = new Set<string>();
  private readonly stops: (() => void)[] = [];

  constructor(
    /** The in-memory broker the module runs on. */
    readonly broker: InMemoryBroker,
    @Inject(RESOLVED_MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    @Inject(IN_MEMORY_CONNECTIONS) private readonly connections: InMemoryConnections,
    private readonly publisher: MessagePublisher,
    private readonly inboxStats: InboxStats,
    private readonly moduleRef: ModuleRef,
    private readonly scheduled: MemoryScheduledMessages,
  ) {}

  /**
   * Moves the test's time: the broker's clock and the clock the scheduled messages wait for, together. With a
   * `dataSource` scheduled messages wait in its table instead, on the database's clock, and only the broker's moves.
   */
  readonly clock: HarnessClock = {
    now: () => new Date(this.scheduled.now()),
    advance: (ms, options) => {
      if (!Number.isFinite(ms) || ms < 0) {
        return Promise.reject(
          new RangeError(`advance(ms): a finite number of milliseconds, 0 or more, got ${ms}`),
        );
      }
      return this.moveClock(this.scheduled.aheadMs + ms, options);
    },
    advanceTo: (at, options) => {
      if (!(at instanceof Date) || Number.isNaN(at.getTime())) {
        return Promise.reject(new RangeError('advanceTo(at): a valid Date'));
      }
      return this.moveClock(Math.max(this.scheduled.aheadMs, at.getTime() - Date.now()), options);
    },
  };

  /**
   * The saga instances (`SagaInstances`): `harness.sagas.find(sagaName, correlationKey)` shows one instance's
   * state, status, version, history and pending timeouts, read from memory without a `dataSource`.
   */
  get sagas(): SagaInstances {
    return this.moduleRef.get(SagaInstances, { strict: false });
  }

  onModuleInit(): void {
    this.stops.push(
      this.broker.observe((event) => this.onBrokerEvent(event)),
      this.inboxStats.onDuplicate((duplicate) => this.onDuplicate(duplicate)),
    );
  }

  onModuleDestroy(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  /** Every message the app published. */
  get published(): readonly PublishedRecord[] {
    return this.records.published;
  }

  /** Every delivery a consumer settled, with its outcome. */
  get consumed(): readonly ConsumedRecord[] {
    return this.records.consumed;
  }

  /** The deliveries that were retried. */
  get retried(): readonly ConsumedRecord[] {
    return this.records.retried;
  }

  /** The deliveries that were dead-lettered. */
  get deadLettered(): readonly ConsumedRecord[] {
    return this.records.deadLettered;
  }

  /** The deliveries skipped as duplicates. */
  get duplicates(): readonly ConsumedRecord[] {
    return this.records.duplicates;
  }

  /**
   * Publishes as the app does, through MessagePublisher: with a `dataSource` into the outbox, in the current
   * transaction (or `options.manager`'s), to reach the broker once it commits.
   */
  publish(message: object, options?: PublishOptions): Promise<PublishReceipt> {
    return this.publisher.publish(message, options);
  }

  /**
   * Puts one message straight into `queue` and resolves with how its consumer settled it. A `@MessageType()`
   * instance goes with the full envelope, as a publisher of this module would send it (each call a new message
   * id, the same idempotency key). Anything else (a Buffer, a string, a plain object as JSON) is the raw body,
   * with only the `headers` and `properties` given: what an unknown client would send.
   */
  async deliver(
    queue: string,
    body: object | string | Buffer,
    headers: Record<string, unknown> = {},
    properties: Partial<MessageProperties> = {},
    { timeoutMs = DEFAULT_WAIT_MS }: { timeoutMs?: number } = {},
  ): Promise<DeliveryOutcome> {
    const { content, props } = await this.toWire(body, headers, properties);
    const messageId = props.messageId as string;
    this.injected.add(messageId);
    const settled = this.waitFor(
      'consumed',
      (record) => record.queue === queue && record.messageId === messageId,
      { timeoutMs, waitingFor: `the delivery of ${messageId} to ${queue} to be settled` },
    );
    const reached = this.broker.publish('', queue, content, props);
    if (reached.length === 0) throw new Error(`deliver(): there is no queue '${queue}'`);
    return (await settled).outcome;
  }

  /**
   * Moves time on by `ms`, as `clock.advance(ms)`: retries waiting in the delay levels come back, each as soon as
   * its delay has passed, and scheduled messages (saga timeouts) due by then are sent. Resolves once every
   * delivery it set off has been settled (the module's own timers, such as deadlines and rate limits, run on the
   * real clock).
   */
  advance(ms: number, options: { timeoutMs?: number } = {}): Promise<void> {
    return this.clock.advance(ms, options);
  }

  /** Resolves once no delivery is in a consumer's hands, after the deliveries just made have started. */
  async settled({ timeoutMs = DEFAULT_WAIT_MS }: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let quietTurns = 0;
    // Deliveries reach consumers a turn of the event loop after the broker hands them over: a few quiet turns
    // in a row mean nothing more is on its way.
    while (quietTurns < 3) {
      await new Promise((resolve) => setImmediate(resolve));
      quietTurns = this.pending.size === 0 ? quietTurns + 1 : 0;
      if (Date.now() > deadline) {
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for ${this.pending.size} deliveries to be settled`,
        );
      }
    }
  }

  /**
   * Resolves with the first record of `kind` that `matches` (one already there, or the next), or fails after
   * `timeoutMs` with what each list holds.
   */
  waitFor<K extends RecordKind>(
    kind: K,
    matches: (record: HarnessRecords[K]) => boolean = () => true,
    { timeoutMs = DEFAULT_WAIT_MS, waitingFor }: { timeoutMs?: number; waitingFor?: string } = {},
  ): Promise<HarnessRecords[K]> {
    const found = (this.records[kind] as HarnessRecords[K][]).find(matches);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        kind,
        matches,
        resolve: (record: never) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(record);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${waitingFor ?? `a matching record in '${kind}'`}; ` +
              `recorded: ${this.summary()}`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Ends every connection to the broker, as a broker restart would; the module reconnects. */
  dropConnections(): void {
    for (const connection of this.connections.open()) connection.drop();
  }

  /**
   * Forgets the records, every key the memory inbox remembers, the saga instances kept in memory and the
   * scheduled messages waiting for the clock; queues keep their messages.
   */
  reset(): void {
    for (const list of Object.values(this.records)) list.length = 0;
    this.injected.clear();
    this.moduleRef.get(MemoryInbox, { strict: false }).clear();
    this.moduleRef.get(MemorySagaStore, { strict: false }).clear();
    this.scheduled.clear();
  }

  /**
   * Moves the clock until it is `aheadMs` ahead of the app's: to each scheduled message due by then in turn,
   * sending it and waiting for what it set off, then to the end.
   */
  private async moveClock(aheadMs: number, { timeoutMs = DEFAULT_WAIT_MS }: { timeoutMs?: number } = {}) {
    for (;;) {
      const due = this.scheduled.takeDue(Date.now() + aheadMs);
      if (!due) break;
      this.moveBy(due.dueAt - Date.now() - this.scheduled.aheadMs);
      const claimChecks = this.moduleRef.get(ClaimCheckWriter, { strict: false });
      await claimChecks.write([due.message]);
      await this.moduleRef.get(ConfirmPublisher, { strict: false }).publish(due.message);
      await this.settled({ timeoutMs });
    }
    this.moveBy(aheadMs - this.scheduled.aheadMs);
    await this.settled({ timeoutMs });
  }

  /** Moves the broker's clock and the scheduled messages' by `ms`, when positive. */
  private moveBy(ms: number): void {
    if (ms <= 0) return;
    this.scheduled.aheadMs += ms;
    this.broker.advance(ms);
  }

  private async toWire(
    body: object | string | Buffer,
    headers: Record<string, unknown>,
    properties: Partial<MessageProperties>,
  ): Promise<{ content: Buffer; props: MessageProperties }> {
    if (typeof body === 'object' && !Buffer.isBuffer(body) && getMessageDefinition(body.constructor)) {
      const outbound = this.moduleRef
        .get(EnvelopeFactory, { strict: false })
        .create(body, { headers: headers as Record<string, string> });
      // A claim-checked message is delivered as a publisher sends it: its body in the store, a reference on the wire.
      await this.moduleRef.get(ClaimCheckWriter, { strict: false }).write([outbound]);
      return {
        content: outbound.body,
        props: { ...outbound.properties, ...properties } as MessageProperties,
      };
    }
    const content = Buffer.isBuffer(body)
      ? body
      : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
    return {
      content,
      props: { messageId: randomUUID(), ...properties, headers: { ...headers } } as MessageProperties,
    };
  }

  private onBrokerEvent(event: BrokerEvent): void {
    if (event.kind === 'published') {
      this.onPublished(event);
      return;
    }
    if (event.kind === 'delivered') {
      this.pending.set(event.message, { queue: event.queue, message: event.message });
      return;
    }
    const pending = this.pending.get(event.message);
    if (!pending) return;
    this.pending.delete(event.message);
    const outcome: DeliveryOutcome = event.kind === 'acked' ? this.outcomeOf(pending) : { kind: 'requeued' };
    const { properties, content } = pending.message;
    const record: ConsumedRecord = {
      queue: pending.queue,
      type: properties.type as string | undefined,
      messageId: properties.messageId as string | undefined,
      attempt: attemptOf(properties.headers?.[HEADERS.attempt]),
      body: bodyOf(content),
      headers: { ...properties.headers },
      outcome,
    };
    this.add('consumed', record);
    const list = listOf(outcome);
    if (list) this.add(list, record);
  }

  private onPublished(event: Extract<BrokerEvent, { kind: 'published' }>): void {
    const headers = event.properties.headers ?? {};
    const messageId = event.properties.messageId as string | undefined;
    const forQueue: unknown =
      event.exchange === this.options.deadLetterExchange
        ? headers[DEAD_LETTER_HEADERS.queue]
        : headers[HEADERS.retryQueue];
    if (typeof forQueue === 'string') {
      for (const pending of this.pending.values()) {
        if (pending.queue === forQueue && pending.message.properties.messageId === messageId) {
          pending.republished = event;
        }
      }
      return;
    }
    if (this.isInternal(event.exchange) || (messageId !== undefined && this.injected.has(messageId))) return;
    this.add('published', {
      exchange: event.exchange,
      routingKey: event.routingKey,
      type: event.properties.type as string | undefined,
      messageId,
      body: bodyOf(event.content),
      headers: { ...headers },
      queues: event.queues,
    });
  }

  private onDuplicate(duplicate: DuplicateDelivery): void {
    for (const pending of this.pending.values()) {
      const messageId = pending.message.properties.messageId as string | undefined;
      if (pending.queue === duplicate.queue && (messageId ?? duplicate.messageId) === duplicate.messageId) {
        pending.duplicate = duplicate;
      }
    }
  }

  private outcomeOf(pending: Pending): DeliveryOutcome {
    const republished = pending.republished;
    if (republished?.exchange === this.options.deadLetterExchange) {
      const headers = republished.properties.headers ?? {};
      return {
        kind: 'dead-lettered',
        reason: String(headers[DEAD_LETTER_HEADERS.reason]),
        errorClass: String(headers[DEAD_LETTER_HEADERS.errorClass]),
        errorMessage: String(headers[DEAD_LETTER_HEADERS.errorMessage]),
        attempts: Number(headers[DEAD_LETTER_HEADERS.attempts]),
      };
    }
    if (republished) {
      const before = attemptOf(pending.message.properties.headers?.[HEADERS.attempt]);
      const after = attemptOf(republished.properties.headers?.[HEADERS.attempt]);
      if (after <= before) return { kind: 'returned' };
      return {
        kind: 'retried',
        nextAttempt: after,
        delayMs: delayOfRoutingKey(republished.routingKey) ?? 0,
      };
    }
    if (pending.duplicate) return { kind: 'duplicate', idempotencyKey: pending.duplicate.idempotencyKey };
    return { kind: 'acked' };
  }

  /** The module's own exchanges: the delay levels, their deliver exchange and the dead-letter exchange. */
  private isInternal(exchange: string): boolean {
    return (
      exchange === this.options.deadLetterExchange || exchange.startsWith(`${this.options.exchange}.retry.`)
    );
  }

  private add<K extends RecordKind>(kind: K, record: HarnessRecords[K]): void {
    (this.records[kind] as HarnessRecords[K][]).push(record);
    for (const waiter of [...this.waiters]) {
      if (waiter.kind === kind && waiter.matches(record as never)) waiter.resolve(record as never);
    }
  }

  private summary(): string {
    return Object.entries(this.records)
      .map(([kind, list]) => `${list.length} ${kind}`)
      .join(', ');
  }
}

function attemptOf(value: unknown): number {
  const attempt = Number(value ?? 1);
  return Number.isInteger(attempt) && attempt >= 1 ? attempt : 1;
}
