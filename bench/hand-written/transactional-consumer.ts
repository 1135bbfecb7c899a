import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import type { Pool, PoolClient } from 'pg';
import { inTransaction } from './in-transaction';

/** Longest idempotency key accepted, as the module's envelope reader caps it. */
const MAX_KEY_LENGTH = 200;

/**
 * How long a failed delivery is held before it is requeued: the broker would otherwise redeliver it at once, in a
 * tight loop while the database is down.
 */
const REQUEUE_DELAY_MS = 1000;

/** What the consumer takes from a delivery before it opens a transaction. */
export interface DecodedMessage {
  idempotencyKey: string;
  messageId: string;
  /** The conversation the message belongs to: its correlation id, else its own id. */
  correlationId: string;
  type: string;
  body: Record<string, unknown>;
}

/**
 * Thrown by the work when the message itself is unusable (a field it needs is missing or malformed): rejected
 * without requeue, to the queue's dead-letter exchange, since no retry could make it succeed.
 */
export class UnusableMessageError extends Error {
  override readonly name = 'UnusableMessageError';
}

/** The handler's database work, run in the message's transaction after its inbox row went in. */
export type TransactionalWork = (client: PoolClient, message: DecodedMessage) => Promise<void>;

/** How a {@link TransactionalConsumer} is set up. */
export interface TransactionalConsumerOptions {
  connection: ChannelModel;
  pool: Pool;
  queue: string;
  /** The inbox's scope: a key is handled once per consumer. */
  consumer: string;
  /** Unacknowledged deliveries, and so transactions, at once; the pool needs as many connections. */
  prefetch: number;
  work: TransactionalWork;
  /**
   * Whether a message is made idempotent by an inbox row in its transaction. False for work that is idempotent by
   * itself (a conditional update): it runs on a pooled connection, without a transaction of the consumer's or an
   * inbox row. Default: true.
   */
  inbox?: boolean;
  /** Called after a message's transaction committed (or found it a duplicate) and it was acknowledged. */
  handled?: (message: DecodedMessage, duplicate: boolean) => void;
}

const INBOX_INSERT =
  'INSERT INTO hw_inbox (consumer, idempotency_key, message_id, message_type) VALUES ($1, $2, $3, $4) ' +
  'ON CONFLICT DO NOTHING';

/**
 * The transactional consumer a careful team writes by hand with `pg` and `amqplib`: per delivery, one
 * transaction that inserts the inbox row (ON CONFLICT DO NOTHING: a duplicate inserts nothing and skips the
 * work), runs the work, commits, and only then acknowledges. Any failure rolls back and requeues (after a
 * pause), so a message is never acknowledged without its effects committed, and a redelivery after a crash
 * between commit and ack finds the inbox row and does nothing twice. A concurrent copy of the same key waits on
 * the first one's uncommitted row, so exactly one of them does the work. A delivery that cannot be decoded, or
 * whose work finds it unusable (UnusableMessageError), is rejected without requeue (the queue's dead-letter
 * exchange takes it): it could never succeed. Work that is idempotent by itself runs with `inbox: false`, without
 * the transaction and the inbox row.
 */
export class TransactionalConsumer {
  private channel?: Channel;
  private consumerTag?: string;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: TransactionalConsumerOptions) {}

  async start(): Promise<void> {
    const channel = await this.options.connection.createChannel();
    this.channel = channel;
    await channel.prefetch(this.options.prefetch);
    const { consumerTag } = await channel.consume(this.options.queue, (delivery) => {
      if (!delivery) return;
      // An ack or nack on a channel that closed meanwhile throws; the broker requeues the delivery anyway.
      const task = this.handle(channel, delivery)
        .catch((error: unknown) => console.error(`${this.options.consumer}: ${String(error)}`))
        .finally(() => this.inFlight.delete(task));
      this.inFlight.add(task);
    });
    this.consumerTag = consumerTag;
  }

  /** Cancels the consumer, waits for the transactions in flight to settle, and closes the channel. */
  async stop(): Promise<void> {
    const channel = this.channel;
    if (!channel) return;
    if (this.consumerTag) await channel.cancel(this.consumerTag);
    await Promise.all(this.inFlight);
    await channel.close();
    this.channel = undefined;
  }

  private async handle(channel: Channel, delivery: ConsumeMessage): Promise<void> {
    const message = decode(delivery);
    if (!message) {
      channel.nack(delivery, false, false);
      return;
    }
    let duplicate: boolean;
    try {
      duplicate =
        this.options.inbox === false ? await this.withoutInbox(message) : await this.transaction(message);
    } catch (error) {
      if (error instanceof UnusableMessageError) {
        console.error(`${this.options.consumer}: message ${message.messageId} rejected: ${error.message}`);
        channel.nack(delivery, false, false);
        return;
      }
      console.error(
        `${this.options.consumer}: message ${message.messageId} failed, requeued: ${String(error)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, REQUEUE_DELAY_MS));
      channel.nack(delivery, false, true);
      return;
    }
    channel.ack(delivery);
    this.options.handled?.(message, duplicate);
  }

  /** Runs work that is idempotent by itself; never a duplicate, as nothing records the message. */
  private async withoutInbox(message: DecodedMessage): Promise<boolean> {
    const client = await this.options.pool.connect();
    try {
      await this.options.work(client, message);
      return false;
    } finally {
      client.release();
    }
  }

  /** Runs the message's transaction; resolves with whether the inbox found it a duplicate. */
  private transaction(message: DecodedMessage): Promise<boolean> {
    return inTransaction(this.options.pool, async (client) => {
      const recorded = await client.query({
        name: 'hw_inbox_record',
        text: INBOX_INSERT,
        values: [this.options.consumer, message.idempotencyKey, message.messageId, message.type],
      });
      const duplicate = recorded.rowCount !== 1;
      if (!duplicate) await this.options.work(client, message);
      return duplicate;
    });
  }
}

/** The delivery's inbox key, ids and JSON body, or undefined when a publisher sent something unusable. */
export function decode(delivery: Pick<ConsumeMessage, 'content' | 'properties'>): DecodedMessage | undefined {
  const { headers, messageId, correlationId, type } = delivery.properties as {
    headers?: Record<string, unknown>;
    messageId?: unknown;
    correlationId?: unknown;
    type?: unknown;
  };
  const key = headers?.['rm-idempotency-key'];
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) return undefined;
  if (typeof messageId !== 'string' || typeof type !== 'string') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(delivery.content.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  return {
    idempotencyKey: key,
    messageId,
    correlationId: typeof correlationId === 'string' && correlationId !== '' ? correlationId : messageId,
    type,
    body: body as Record<string, unknown>,
  };
}
