import type { MessageProperties } from 'amqplib';
import { withDeath, type DeathReason } from './dead-lettering';
import { exchangeInequivalence, queueInequivalence, type DeclaredFlags } from './equivalence';
import { route, type Binding, type ExchangeType } from './routing';

/** A message as a queue holds it. */
export interface StoredMessage {
  readonly content: Buffer;
  properties: MessageProperties;
  readonly exchange: string;
  readonly routingKey: string;
  redelivered: boolean;
  /** Its place in publish order: a classic queue puts a requeued message back where it was. */
  readonly seq: number;
  /** A quorum queue's count of its returns, shown to consumers as `x-delivery-count`; none in a classic queue. */
  deliveryCount?: number;
  /** In a quorum queue: back from a closed channel, so ahead of the messages never delivered. */
  returned?: boolean;
  /** Virtual time at which it expires (the queue's TTL, or the message's `expiration`, whichever is first). */
  expiresAt?: number;
}

/** Who takes a queue's deliveries: a channel's consumer, with the room its prefetch leaves. */
export interface QueueConsumer {
  readonly tag: string;
  /** True while it can take one more delivery. */
  hasRoom(): boolean;
  /** Hands it a message; it now holds it unacknowledged. */
  deliver(queue: string, message: StoredMessage): void;
  /** The broker cancelled it (its queue was deleted): amqplib hands the consumer `null`. */
  cancelled(): void;
}

/**
 * What the broker did, in the order it did it, for observers (the MessagingHarness): a message routed in
 * (`published`, by a client or by dead-lettering), handed to a consumer (`delivered`), and how its consumer
 * settled it (`acked`, `requeued`, `rejected`).
 */
export type BrokerEvent =
  | {
      readonly kind: 'published';
      readonly exchange: string;
      readonly routingKey: string;
      readonly content: Buffer;
      readonly properties: MessageProperties;
      readonly queues: readonly string[];
    }
  | {
      readonly kind: 'delivered' | 'acked' | 'requeued' | 'rejected';
      readonly queue: string;
      readonly message: StoredMessage;
    };

/** amqplib declares durable, not auto-deleted, unless told otherwise. */
const DEFAULT_FLAGS: DeclaredFlags = { durable: true, autoDelete: false };

/** An AMQP error as RabbitMQ sends it: the reply code closes the channel (or the connection). */
export class AmqpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(`Operation failed: ${message}`);
  }
}

interface Exchange {
  readonly type: ExchangeType;
  readonly flags: DeclaredFlags;
  readonly bindings: Binding[];
  /** Where a message this exchange routes nowhere goes instead (`alternate-exchange`). */
  readonly alternate?: string;
}

interface Queue {
  readonly name: string;
  readonly flags: DeclaredFlags;
  readonly args: Readonly<Record<string, unknown>>;
  readonly messages: StoredMessage[];
  readonly consumers: QueueConsumer[];
  /** The next consumer to get a delivery (round robin). */
  turn: number;
}

/** RabbitMQ's direct reply-to pseudo-queue; a reply goes to one of the names it stands for, `<it>.<id>`. */
export const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

/** Takes the replies sent to one channel's direct reply-to name, as they are published (no queue, no ack). */
export type ReplyConsumer = (content: Buffer, properties: MessageProperties, routingKey: string) => void;

/** The largest message TTL RabbitMQ accepts, in ms. */
const MAX_TTL_MS = 2 ** 32 - 1;

/**
 * A RabbitMQ broker in memory, for tests that need the module's topology without a broker: exchanges of the
 * types the module declares (with exchange-to-exchange bindings and alternate exchanges), queues with their TTL, dead-lettering
 * (`x-death` kept as RabbitMQ keeps it), delivery limits and single active consumers, and consumers bounded by
 * their prefetch. Time is virtual: messages expire when `advance(ms)` moves the clock past their TTL, so a
 * retry waiting in a delay level comes back without the test waiting for it. Direct reply-to works as on
 * RabbitMQ: a reply published on the default exchange to a channel's reply name goes straight to it, or is
 * dropped once that channel has closed.
 */
export class InMemoryBroker {
  private readonly exchanges = new Map<string, Exchange>([
    ['', { type: 'direct', flags: DEFAULT_FLAGS, bindings: [] }],
  ]);
  private readonly queues = new Map<string, Queue>();
  private clock = 0;
  private readonly observers = new Set<(event: BrokerEvent) => void>();
  private readonly replyConsumers = new Map<string, ReplyConsumer>();
  private nextReplyId = 1;
  private published = 0;

  /** Virtual milliseconds since the broker was made. */
  get now(): number {
    return this.clock;
  }

  /** Moves the clock on by `ms`, expiring (and dead-lettering) every message whose time has come, in time order. */
  advance(ms: number): void {
    const until = this.clock + ms;
    for (;;) {
      const next = this.nextExpiry();
      if (next === undefined || next > until) break;
      this.clock = Math.max(this.clock, next);
      this.expireDue();
    }
    this.clock = until;
  }

  /** Calls `observer` with every event from now on, synchronously; returns a function that stops it. */
  observe(observer: (event: BrokerEvent) => void): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /** Declares an exchange; one declared again must have the same type and flags (see equivalence.ts). */
  assertExchange(
    name: string,
    type: ExchangeType,
    flags: DeclaredFlags = DEFAULT_FLAGS,
    alternate?: string,
  ): void {
    const existing = this.exchanges.get(name);
    const refusal = existing && exchangeInequivalence(name, existing, type, flags);
    if (refusal) throw new AmqpError(406, refusal);
    if (!existing) this.exchanges.set(name, { type, flags: { ...flags }, bindings: [], alternate });
  }

  checkExchange(name: string): void {
    this.exchangeNamed(name);
  }

  /** Deletes an exchange and the bindings from and to it; deleting one that does not exist succeeds. */
  deleteExchange(name: string): void {
    if (name === '') return;
    this.exchanges.delete(name);
    for (const exchange of this.exchanges.values()) {
      const kept = exchange.bindings.filter((b) => !b.toExchange || b.destination !== name);
      exchange.bindings.splice(0, exchange.bindings.length, ...kept);
    }
  }

  /** Declares a queue; one declared again must be equivalent as RabbitMQ 3.10 compares (see equivalence.ts). */
  assertQueue(
    name: string,
    args: Readonly<Record<string, unknown>> = {},
    flags: DeclaredFlags = DEFAULT_FLAGS,
  ): void {
    const existing = this.queues.get(name);
    if (existing) {
      const refusal = queueInequivalence(name, existing, flags, args);
      if (refusal) throw new AmqpError(406, refusal);
      return;
    }
    this.queues.set(name, {
      name,
      flags: { ...flags },
      args: { ...args },
      messages: [],
      consumers: [],
      turn: 0,
    });
    this.exchanges.get('')?.bindings.push({ destination: name, toExchange: false, pattern: name, args: {} });
  }

  checkQueue(name: string): { queue: string; messageCount: number; consumerCount: number } {
    const queue = this.queueNamed(name);
    return { queue: name, messageCount: queue.messages.length, consumerCount: queue.consumers.length };
  }

  /**
   * Deletes a queue (one that does not exist: nothing to do) and its bindings, and cancels its consumers as
   * RabbitMQ does; answers how many ready messages it dropped.
   */
  deleteQueue(name: string): { messageCount: number } {
    const queue = this.queues.get(name);
    this.queues.delete(name);
    for (const exchange of this.exchanges.values()) {
      const kept = exchange.bindings.filter((b) => b.toExchange || b.destination !== name);
      exchange.bindings.splice(0, exchange.bindings.length, ...kept);
    }
    for (const consumer of queue?.consumers.splice(0) ?? []) consumer.cancelled();
    return { messageCount: queue?.messages.length ?? 0 };
  }

  bind(
    source: string,
    destination: string,
    pattern: string,
    args: Readonly<Record<string, unknown>>,
    toExchange: boolean,
  ): void {
    const exchange = this.exchangeNamed(source);
    if (toExchange) this.exchangeNamed(destination);
    else this.queueNamed(destination);
    const same = (b: Binding) =>
      b.destination === destination && b.toExchange === toExchange && b.pattern === pattern;
    if (!exchange.bindings.some(same)) exchange.bindings.push({ destination, toExchange, pattern, args });
  }

  /**
   * Routes a message by `routingKey` and `alsoRoutedBy` (the keys of its `CC` and `BCC` headers); returns the
   * queues it reached (none: unroutable), or the reply name it was delivered to.
   */
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    properties: MessageProperties,
    alsoRoutedBy: readonly string[] = [],
  ): string[] {
    if (exchange === '' && routingKey.startsWith(`${DIRECT_REPLY_TO}.`)) {
      const consumer = this.replyConsumers.get(routingKey);
      consumer?.(content, { ...properties, headers: { ...properties.headers } }, routingKey);
      return consumer ? [routingKey] : [];
    }
    const reached = new Set<string>();
    this.routeInto(exchange, [routingKey, ...alsoRoutedBy], properties.headers ?? {}, reached, new Set());
    this.emit({ kind: 'published', exchange, routingKey, content, properties, queues: [...reached] });
    for (const name of reached) {
      this.enqueue(this.queueNamed(name), {
        content,
        properties: { ...properties, headers: { ...properties.headers } },
        exchange,
        routingKey,
        redelivered: false,
        seq: this.published++,
      });
    }
    return [...reached];
  }

  /** Gives a channel's direct reply-to consumer its reply name, which its requests carry as `replyTo`. */
  addReplyConsumer(consumer: ReplyConsumer): string {
    const name = `${DIRECT_REPLY_TO}.${this.nextReplyId++}`;
    this.replyConsumers.set(name, consumer);
    return name;
  }

  /** Forgets a reply name: replies sent to it from now on are dropped. */
  removeReplyConsumer(name: string): void {
    this.replyConsumers.delete(name);
  }

  addConsumer(name: string, consumer: QueueConsumer): void {
    const queue = this.queueNamed(name);
    queue.consumers.push(consumer);
    this.dispatch(queue);
  }

  removeConsumer(tag: string): void {
    for (const queue of this.queues.values()) {
      const index = queue.consumers.findIndex((consumer) => consumer.tag === tag);
      if (index >= 0) {
        queue.consumers.splice(index, 1);
        this.dispatch(queue);
      }
    }
  }

  /** `basic.get`: the message at the head of the queue, now held unacknowledged by the caller, or undefined. */
  take(name: string): StoredMessage | undefined {
    return this.head(this.queueNamed(name));
  }

  /** A consumer acknowledged a message it held: it is gone, and the consumer has room again. */
  acknowledge(name: string, message: StoredMessage): void {
    this.emit({ kind: 'acked', queue: name, message });
    const queue = this.queues.get(name);
    if (queue) this.dispatch(queue);
  }

  /**
   * Puts an unacknowledged message back, redelivered: `nacked` with requeue, or `returned` by a channel that
   * closed. A classic queue puts it back where it was in publish order. A quorum queue (RabbitMQ 3.10) counts
   * the return, dead-letters the message as `delivery_limit` once the count passes `x-delivery-limit`, and
   * queues a nacked message at the back but a returned one ahead of the messages never delivered.
   */
  requeue(name: string, message: StoredMessage, how: 'nacked' | 'returned' = 'nacked'): void {
    this.emit({ kind: 'requeued', queue: name, message });
    const queue = this.queues.get(name);
    if (!queue) return;
    message.redelivered = true;
    if (message.deliveryCount !== undefined) {
      message.deliveryCount += 1;
      const limit = queue.args['x-delivery-limit'];
      if (typeof limit === 'number' && message.deliveryCount > limit) {
        this.deadLetter(queue, message, 'delivery_limit');
        return;
      }
      if (how === 'nacked') {
        queue.messages.push(message);
      } else {
        message.returned = true;
        const behind = queue.messages.findIndex((other) => other.returned !== true);
        queue.messages.splice(behind < 0 ? queue.messages.length : behind, 0, message);
      }
    } else {
      const later = queue.messages.findIndex((other) => other.seq > message.seq);
      queue.messages.splice(later < 0 ? queue.messages.length : later, 0, message);
    }
    this.dispatch(queue);
  }

  /** A message its consumer rejected without requeue: dead-lettered if the queue has a dead-letter exchange. */
  reject(name: string, message: StoredMessage): void {
    this.emit({ kind: 'rejected', queue: name, message });
    const queue = this.queues.get(name);
    if (queue) this.deadLetter(queue, message, 'rejected');
  }

  private routeInto(
    name: string,
    routingKeys: readonly string[],
    headers: Readonly<Record<string, unknown>>,
    reached: Set<string>,
    visited: Set<string>,
  ): void {
    if (visited.has(name)) return;
    visited.add(name);
    const exchange = this.exchanges.get(name);
    if (!exchange) throw new AmqpError(404, `NOT_FOUND - no exchange '${name}' in vhost '/'`);
    const bindings = route(exchange.type, exchange.bindings, routingKeys, headers);
    for (const binding of bindings) {
      if (binding.toExchange) this.routeInto(binding.destination, routingKeys, headers, reached, visited);
      else reached.add(binding.destination);
    }
    if (bindings.length === 0 && exchange.alternate && this.exchanges.has(exchange.alternate)) {
      this.routeInto(exchange.alternate, routingKeys, headers, reached, visited);
    }
  }

  private enqueue(queue: Queue, message: StoredMessage): void {
    const ttl = [queue.args['x-message-ttl'], message.properties.expiration]
      .map((value) => (value === undefined ? undefined : Number(value)))
      .filter(
        (value): value is number => value !== undefined && Number.isFinite(value) && value <= MAX_TTL_MS,
      );
    message.expiresAt = ttl.length > 0 ? this.clock + Math.min(...ttl) : undefined;
    if (queue.args['x-queue-type'] === 'quorum') message.deliveryCount = 0;
    queue.messages.push(message);
    this.dispatch(queue);
  }

  /** Hands ready messages to consumers with room, round robin; a single-active-consumer queue uses its first. */
  private dispatch(queue: Queue): void {
    const single = queue.args['x-single-active-consumer'] === true;
    while (queue.messages.length > 0 && queue.consumers.length > 0) {
      const candidates = single ? [queue.consumers[0]] : queue.consumers;
      const consumer = this.nextWithRoom(queue, candidates);
      if (!consumer) return;
      const message = this.head(queue) as StoredMessage;
      this.emit({ kind: 'delivered', queue: queue.name, message });
      consumer.deliver(queue.name, message);
    }
  }

  private nextWithRoom(queue: Queue, candidates: readonly QueueConsumer[]): QueueConsumer | undefined {
    for (let i = 0; i < candidates.length; i++) {
      const consumer = candidates[(queue.turn + i) % candidates.length];
      if (consumer.hasRoom()) {
        queue.turn = (queue.turn + i + 1) % candidates.length;
        return consumer;
      }
    }
    return undefined;
  }

  /** Takes the message at the head of `queue`. */
  private head(queue: Queue): StoredMessage | undefined {
    const message = queue.messages.shift();
    if (message) message.returned = undefined;
    return message;
  }

  private nextExpiry(): number | undefined {
    let next: number | undefined;
    for (const queue of this.queues.values()) {
      // RabbitMQ expires messages at the head of a queue only.
      const head = queue.messages[0]?.expiresAt;
      if (head !== undefined && (next === undefined || head < next)) next = head;
    }
    return next;
  }

  private expireDue(): void {
    for (const queue of [...this.queues.values()]) {
      while (queue.messages.length > 0 && (queue.messages[0].expiresAt ?? Infinity) <= this.clock) {
        this.deadLetter(queue, queue.messages.shift() as StoredMessage, 'expired');
      }
    }
  }

  /**
   * Dead-letters as RabbitMQ does: `x-death` counts per queue and reason, newest first; `expiration` moves into
   * the entry as `original-expiration`.
   */
  private deadLetter(queue: Queue, message: StoredMessage, reason: DeathReason): void {
    const exchange = queue.args['x-dead-letter-exchange'];
    if (typeof exchange !== 'string') return;
    const headers = withDeath(message.properties.headers ?? {}, {
      queue: queue.name,
      reason,
      exchange: message.exchange,
      routingKey: message.routingKey,
      atSeconds: Math.floor(this.clock / 1000),
      originalExpiration: message.properties.expiration as string | undefined,
    });
    const properties: MessageProperties = { ...message.properties, headers, expiration: undefined };
    const routingKey = queue.args['x-dead-letter-routing-key'];
    // RabbitMQ drops a dead letter whose exchange does not exist.
    if (!this.exchanges.has(exchange)) return;
    this.publish(
      exchange,
      typeof routingKey === 'string' ? routingKey : message.routingKey,
      message.content,
      properties,
    );
  }

  private emit(event: BrokerEvent): void {
    for (const observer of this.observers) observer(event);
  }

  private exchangeNamed(name: string): Exchange {
    const exchange = this.exchanges.get(name);
    if (!exchange) throw new AmqpError(404, `NOT_FOUND - no exchange '${name}' in vhost '/'`);
    return exchange;
  }

  private queueNamed(name: string): Queue {
    const queue = this.queues.get(name);
    if (!queue) throw new AmqpError(404, `NOT_FOUND - no queue '${name}' in vhost '/'`);
    return queue;
  }
}
