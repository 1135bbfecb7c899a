import { EventEmitter } from 'node:events';
import type { ConsumeMessage, GetMessage, MessageProperties, Options } from 'amqplib';
import type { ExchangeType } from './routing';
import { AmqpError, DIRECT_REPLY_TO, type InMemoryBroker, type StoredMessage } from './in-memory-broker';

/** What an operation on a closed channel throws, as amqplib's IllegalOperationError says it. */
export class IllegalOperationError extends Error {
  override readonly name = 'IllegalOperationError';
}

interface Held {
  readonly queue: string;
  readonly message: StoredMessage;
  readonly consumerTag?: string;
}

/**
 * A channel on the in-memory broker with the part of amqplib's `Channel` (and `ConfirmChannel`) the module
 * uses. A channel error closes the channel as RabbitMQ's does: the operation rejects, and the channel emits
 * `error` and then `close`; its unacknowledged messages go back to their queues, redelivered.
 */
export class InMemoryChannel extends EventEmitter {
  private nextTag = 1;
  private readonly held = new Map<number, Held>();
  private readonly consumers = new Map<
    string,
    { queue: string; onMessage: (m: ConsumeMessage | null) => void }
  >();
  private prefetchCount = 0;
  private closed = false;
  /** This channel's direct reply-to name and consumer tag, once it consumes `amq.rabbitmq.reply-to`. */
  private replies?: { name: string; consumerTag: string };
  /** Confirm callbacks not yet called: a channel that closes first fails them, as amqplib does. */
  private readonly unconfirmed = new Set<(error: unknown) => void>();
  private closedWithUnconfirmed = false;

  constructor(
    private readonly broker: InMemoryBroker,
    readonly connection: { serverProperties: { version: string } },
    private readonly confirms: boolean,
    private readonly onClosed: (channel: InMemoryChannel) => void,
  ) {
    super();
  }

  assertExchange(
    exchange: string,
    type: string,
    options: Options.AssertExchange = {},
  ): Promise<{ exchange: string }> {
    return this.run(() => {
      const alternate: unknown =
        options.alternateExchange ??
        (options.arguments as Record<string, unknown> | undefined)?.['alternate-exchange'];
      this.broker.assertExchange(
        exchange,
        type as ExchangeType,
        flagsOf(options),
        typeof alternate === 'string' ? alternate : undefined,
      );
      return { exchange };
    });
  }

  deleteExchange(exchange: string): Promise<Record<string, never>> {
    return this.run(() => {
      this.broker.deleteExchange(exchange);
      return {};
    });
  }

  checkExchange(exchange: string): Promise<{ exchange: string }> {
    return this.run(() => {
      this.broker.checkExchange(exchange);
      return { exchange };
    });
  }

  assertQueue(queue: string, options: Options.AssertQueue = {}) {
    return this.run(() => {
      this.broker.assertQueue(
        queue,
        { ...(options.arguments as Record<string, unknown> | undefined) },
        flagsOf(options),
      );
      return this.broker.checkQueue(queue);
    });
  }

  checkQueue(queue: string) {
    return this.run(() => this.broker.checkQueue(queue));
  }

  deleteQueue(queue: string) {
    return this.run(() => this.broker.deleteQueue(queue));
  }

  bindQueue(queue: string, source: string, pattern: string, args: Record<string, unknown> = {}) {
    return this.run(() => {
      this.broker.bind(source, queue, pattern, args, false);
      return {};
    });
  }

  bindExchange(destination: string, source: string, pattern: string, args: Record<string, unknown> = {}) {
    return this.run(() => {
      this.broker.bind(source, destination, pattern, args, true);
      return {};
    });
  }

  prefetch(count: number): Promise<void> {
    return this.run(() => {
      this.prefetchCount = count;
    });
  }

  /** Publishes; on a confirm channel `callback` is called once the broker has the message (or refused it). */
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish = {},
    callback?: (error: unknown) => void,
  ): boolean {
    this.assertOpen();
    if (options.replyTo === DIRECT_REPLY_TO) {
      if (!this.replies) {
        this.fail(new AmqpError(406, 'PRECONDITION_FAILED - fast reply consumer does not exist'));
        return true;
      }
      options = { ...options, replyTo: this.replies.name };
    }
    const properties = toProperties(options);
    const confirm = this.confirms && callback ? this.awaitingConfirm(callback) : undefined;
    let reached: string[];
    try {
      reached = this.broker.publish(exchange, routingKey, content, properties, [
        ...routingKeysOf(options.CC),
        ...routingKeysOf(options.BCC),
      ]);
    } catch (error) {
      this.fail(error);
      return true;
    }
    if (reached.length === 0 && options.mandatory) {
      setImmediate(() =>
        this.emit('return', {
          content,
          fields: { exchange, routingKey, replyCode: 312, replyText: 'NO_ROUTE' },
          properties,
        }),
      );
    }
    if (confirm) setImmediate(() => confirm(null));
    return true;
  }

  waitForConfirms(): Promise<void> {
    return new Promise((resolve, reject) =>
      setImmediate(() => (this.closedWithUnconfirmed ? reject(new Error('channel closed')) : resolve())),
    );
  }

  consume(
    queue: string,
    onMessage: (message: ConsumeMessage | null) => void,
    options: Options.Consume = {},
  ): Promise<{ consumerTag: string }> {
    if (queue === DIRECT_REPLY_TO) return this.run(() => this.consumeReplies(onMessage, options));
    return this.run(() => {
      const consumerTag = options.consumerTag ?? `amq.ctag-${Math.random().toString(36).slice(2)}`;
      this.consumers.set(consumerTag, { queue, onMessage });
      this.broker.addConsumer(queue, {
        tag: consumerTag,
        hasRoom: () =>
          !this.closed && (this.prefetchCount === 0 || this.heldBy(consumerTag) < this.prefetchCount),
        deliver: (from, message) => this.deliver(from, message, consumerTag),
        cancelled: () => {
          const consumer = this.consumers.get(consumerTag);
          this.consumers.delete(consumerTag);
          setImmediate(() => consumer?.onMessage(null));
        },
      });
      return { consumerTag };
    });
  }

  cancel(consumerTag: string): Promise<{ consumerTag: string }> {
    return this.run(() => {
      if (this.replies?.consumerTag === consumerTag) {
        this.broker.removeReplyConsumer(this.replies.name);
        this.replies = undefined;
        return { consumerTag };
      }
      this.consumers.delete(consumerTag);
      this.broker.removeConsumer(consumerTag);
      return { consumerTag };
    });
  }

  get(queue: string, options: Options.Get = {}): Promise<GetMessage | false> {
    return this.run(() => {
      const message = this.broker.take(queue);
      if (!message) return false;
      // With noAck the broker forgets the message as it hands it over.
      const deliveryTag = options.noAck ? this.nextTag++ : this.hold({ queue, message });
      return {
        content: message.content,
        properties: deliveredProperties(message),
        fields: {
          ...fieldsOf(message, deliveryTag),
          messageCount: this.broker.checkQueue(queue).messageCount,
        },
      };
    });
  }

  ack(message: { fields: { deliveryTag: number } }, allUpTo = false): void {
    for (const held of this.settle(message.fields.deliveryTag, allUpTo))
      this.broker.acknowledge(held.queue, held.message);
  }

  nack(message: { fields: { deliveryTag: number } }, allUpTo = false, requeue = true): void {
    for (const held of this.settle(message.fields.deliveryTag, allUpTo)) {
      if (requeue) this.broker.requeue(held.queue, held.message);
      else this.broker.reject(held.queue, held.message);
    }
  }

  reject(message: { fields: { deliveryTag: number } }, requeue = true): void {
    this.nack(message, false, requeue);
  }

  async close(): Promise<void> {
    if (this.closed) throw new IllegalOperationError('Channel closed');
    this.shutDown();
    await Promise.resolve();
  }

  /** Closes the channel as the connection going away does: no error, everything unacknowledged requeued. */
  shutDown(error?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    for (const tag of this.consumers.keys()) this.broker.removeConsumer(tag);
    this.consumers.clear();
    if (this.replies) this.broker.removeReplyConsumer(this.replies.name);
    this.replies = undefined;
    const held = [...this.held.values()];
    this.held.clear();
    for (const { queue, message } of held) this.broker.requeue(queue, message, 'returned');
    this.onClosed(this);
    setImmediate(() => {
      // Confirms handed over before the close stand; the rest fail, as amqplib fails them.
      this.closedWithUnconfirmed = this.unconfirmed.size > 0;
      for (const confirm of [...this.unconfirmed]) confirm(new Error('channel closed'));
      if (error) this.emit('error', error);
      this.emit('close');
    });
  }

  /**
   * Consumes this channel's direct replies: RabbitMQ accepts only a no-ack consumer, one per channel, and each
   * reply arrives straight from its publish, with nothing to acknowledge.
   */
  private consumeReplies(
    onMessage: (message: ConsumeMessage | null) => void,
    options: Options.Consume,
  ): { consumerTag: string } {
    if (!options.noAck) {
      throw new AmqpError(406, 'PRECONDITION_FAILED - reply consumer cannot acknowledge');
    }
    if (this.replies) throw new AmqpError(406, 'PRECONDITION_FAILED - reply consumer already set');
    const consumerTag = options.consumerTag ?? `amq.ctag-${Math.random().toString(36).slice(2)}`;
    const name = this.broker.addReplyConsumer((content, properties, routingKey) =>
      setImmediate(() => {
        if (this.replies?.name !== name) return;
        onMessage({
          content,
          properties,
          fields: { deliveryTag: this.nextTag++, redelivered: false, exchange: '', routingKey, consumerTag },
        });
      }),
    );
    this.replies = { name, consumerTag };
    return { consumerTag };
  }

  /** `callback`, called once: by the broker's confirm, or with an error when the channel closes before it. */
  private awaitingConfirm(callback: (error: unknown) => void): (error: unknown) => void {
    const once = (error: unknown) => {
      if (!this.unconfirmed.delete(once)) return;
      callback(error);
    };
    this.unconfirmed.add(once);
    return once;
  }

  private deliver(queue: string, message: StoredMessage, consumerTag: string): void {
    const deliveryTag = this.hold({ queue, message, consumerTag });
    const consumer = this.consumers.get(consumerTag);
    const delivery: ConsumeMessage = {
      content: message.content,
      properties: deliveredProperties(message),
      fields: { ...fieldsOf(message, deliveryTag), consumerTag },
    };
    setImmediate(() => {
      if (this.held.has(deliveryTag)) consumer?.onMessage(delivery);
    });
  }

  private hold(held: Held): number {
    const deliveryTag = this.nextTag++;
    this.held.set(deliveryTag, held);
    return deliveryTag;
  }

  private heldBy(consumerTag: string): number {
    let count = 0;
    for (const held of this.held.values()) if (held.consumerTag === consumerTag) count++;
    return count;
  }

  private settle(deliveryTag: number, allUpTo: boolean): Held[] {
    this.assertOpen();
    const tags = allUpTo ? [...this.held.keys()].filter((tag) => tag <= deliveryTag) : [deliveryTag];
    if (!this.held.has(deliveryTag)) {
      this.fail(new AmqpError(406, `PRECONDITION_FAILED - unknown delivery tag ${deliveryTag}`));
      return [];
    }
    return tags.map((tag) => {
      const held = this.held.get(tag) as Held;
      this.held.delete(tag);
      return held;
    });
  }

  private run<T>(operation: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new IllegalOperationError('Channel closed'));
    try {
      return Promise.resolve(operation());
    } catch (error) {
      this.fail(error);
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private fail(error: unknown): void {
    if (error instanceof AmqpError) this.shutDown(error);
  }

  private assertOpen(): void {
    if (this.closed) throw new IllegalOperationError('Channel closed');
  }
}

/** amqplib declares durable, not auto-deleted, unless told otherwise. */
function flagsOf(options: { durable?: boolean; autoDelete?: boolean }) {
  return { durable: options.durable ?? true, autoDelete: options.autoDelete ?? false };
}

/** A message's properties as a consumer sees them: a quorum queue adds its count of returns, 0 at first. */
function deliveredProperties(message: StoredMessage): MessageProperties {
  if (message.deliveryCount === undefined) return message.properties;
  return {
    ...message.properties,
    headers: { ...message.properties.headers, 'x-delivery-count': message.deliveryCount },
  };
}

/** The delivery fields a consumed and a fetched message share. */
function fieldsOf(message: StoredMessage, deliveryTag: number) {
  return {
    deliveryTag,
    redelivered: message.redelivered,
    exchange: message.exchange,
    routingKey: message.routingKey,
  };
}

/** The routing keys a `CC` or `BCC` publish option adds. */
function routingKeysOf(keys: string | readonly string[] | undefined): string[] {
  if (keys === undefined) return [];
  return typeof keys === 'string' ? [keys] : [...keys];
}

/** The properties a message is stored with: as RabbitMQ delivers them, `CC` kept in the headers and `BCC` not. */
function toProperties(options: Options.Publish): MessageProperties {
  const cc = routingKeysOf(options.CC);
  return {
    contentType: options.contentType,
    contentEncoding: options.contentEncoding,
    headers: {
      ...(options.headers as Record<string, unknown> | undefined),
      ...(cc.length > 0 ? { CC: cc } : {}),
    },
    deliveryMode: options.persistent ? 2 : options.deliveryMode,
    priority: options.priority,
    correlationId: options.correlationId,
    replyTo: options.replyTo,
    expiration: options.expiration,
    messageId: options.messageId,
    timestamp: options.timestamp,
    type: options.type,
    userId: options.userId,
    appId: options.appId,
    clusterId: undefined,
  };
}
