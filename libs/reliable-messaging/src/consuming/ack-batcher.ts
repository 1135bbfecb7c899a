import type { Channel, ConsumeMessage } from 'amqplib';

/**
 * Sends one channel's acks in batches. amqplib writes every frame to the socket on its own, so one ack per
 * delivery costs one socket write each; acks made in the same turn of the event loop are sent together at its
 * end instead, as one `basic.ack` with `multiple` for the longest run of tracked deliveries that are all
 * acknowledged (no unsettled or released delivery before them), and single acks for the rest.
 * Nacks are sent at once. `flush()` sends what waits, e.g. before the channel is closed.
 */
export class AckBatcher {
  /** Every delivery on the channel not yet acked or nacked, in delivery order: true once its ack waits. */
  private readonly unsettled = new Map<number, boolean>();
  private waiting = 0;
  private scheduled = false;
  private readonly flushLater = (): void => this.flush();

  constructor(private readonly channel: Channel) {}

  /** Records a delivery as unsettled; call for every delivery the channel hands out, in order. */
  track(message: ConsumeMessage): void {
    this.unsettled.set(message.fields.deliveryTag, false);
  }

  /** Queues the ack of `message` for the end of this turn. Throws when the channel is already closed. */
  ack(message: ConsumeMessage): void {
    const tag = message.fields.deliveryTag;
    if (this.unsettled.get(tag) !== false) {
      this.channel.ack(message);
      return;
    }
    this.unsettled.set(tag, true);
    this.waiting++;
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushLater);
    }
  }

  /** Sends the nack of `message` at once. */
  nack(message: ConsumeMessage, requeue: boolean): void {
    this.unsettled.delete(message.fields.deliveryTag);
    this.channel.nack(message, false, requeue);
  }

  /** Sends every waiting ack now. */
  flush(): void {
    this.scheduled = false;
    if (this.waiting === 0) return;
    this.waiting = 0;
    let last: number | undefined;
    let run = 0;
    for (const [tag, acked] of this.unsettled) {
      if (!acked) break;
      last = tag;
      run++;
    }
    try {
      if (last !== undefined) {
        this.channel.ack(asMessage(last), run > 1);
        for (const [tag] of this.unsettled) {
          this.unsettled.delete(tag);
          if (tag === last) break;
        }
      }
      for (const [tag, acked] of this.unsettled) {
        if (!acked) continue;
        this.unsettled.delete(tag);
        this.channel.ack(asMessage(tag));
      }
    } catch {
      // NOTE: amqplib throws IllegalOperationError when the channel has closed; the broker requeues then.
    }
  }
}

/** amqplib reads only the delivery tag of the message it acknowledges. */
function asMessage(deliveryTag: number): ConsumeMessage {
  return { fields: { deliveryTag } } as ConsumeMessage;
}
