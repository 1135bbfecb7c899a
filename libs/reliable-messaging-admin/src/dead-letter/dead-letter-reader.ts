import type { Channel, ChannelModel, GetMessage } from 'amqplib';
import { describeQueueError } from 'nestjs-reliable-messaging/operations';

/**
 * How many messages past the depth measured at the start a read may take. The depth counts only ready
 * messages, so messages another reader (or the monitor's peek) is returning at that moment are missed by it;
 * the slack lets the read still reach them, and bounds it.
 */
const READ_SLACK = 1000;

/**
 * Reads one dead-letter queue without losing or reordering anything: messages are taken with `basic.get` and
 * manual acknowledgement on a channel of its own, held while the caller decides, and only those the caller
 * removes (replayed or purged) are acknowledged; `close()` returns every other one with `basic.nack(requeue)`,
 * in the order it was taken, so the queue keeps its order. Reading stops when the queue is empty, or after the
 * depth it had when the read began plus a slack of 1000, so dead letters arriving meanwhile cannot make a read
 * endless.
 *
 * While a read is open the messages it holds are invisible to other readers and the broker counts them as
 * unacknowledged, not ready: a concurrent tool sees fewer dead letters and the depth gauge dips until the
 * read closes. If this process dies, the broker returns what it held. Each requeue counts as a delivery on a
 * quorum queue, which is why dead-letter queues are declared with a delivery limit that is never reached.
 */
export class DeadLetterReader {
  private taken = 0;
  private closed = false;

  private constructor(
    private readonly channel: Channel,
    /** The dead-letter queue read. */
    readonly queue: string,
    /** Ready messages when the read began. */
    readonly depth: number,
  ) {}

  /** Opens a read of `queue`; fails with the broker's reason when the queue does not exist. */
  static async open(model: ChannelModel, queue: string): Promise<DeadLetterReader> {
    const channel = await model.createChannel();
    // NOTE: a missing queue or a failed operation closes the channel with a reason; unhandled, amqplib would
    // rethrow the 'error' event on the connection.
    channel.on('error', () => undefined);
    try {
      const { messageCount } = await channel.checkQueue(queue);
      return new DeadLetterReader(channel, queue, messageCount);
    } catch (error) {
      await channel.close().catch(() => undefined);
      throw new Error(`cannot read dead-letter queue '${queue}': ${describeQueueError(error)}`, {
        cause: error,
      });
    }
  }

  /** How many messages this read has taken so far. */
  get count(): number {
    return this.taken;
  }

  /** The next message, held until removed or released; undefined at the end of the read. */
  async next(): Promise<GetMessage | undefined> {
    if (this.closed || this.taken >= this.depth + READ_SLACK) return undefined;
    const message = await this.channel.get(this.queue, { noAck: false });
    if (message === false) return undefined;
    this.taken++;
    return message;
  }

  /** Removes a held message from the queue for good. False when the channel is gone (the broker kept it). */
  remove(message: GetMessage): boolean {
    try {
      this.channel.ack(message);
      return true;
    } catch {
      return false;
    }
  }

  /** Returns every message still held to the queue, in order, and ends the read. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      this.channel.nackAll(true);
    } catch {
      // NOTE: the channel is already closed, and the broker requeued what it held when it closed.
    }
    await this.channel.close().catch(() => undefined);
  }
}
