import type { Channel, ConsumeMessage } from 'amqplib';
import type { EntityManager } from 'typeorm';
import type { Envelope } from '../envelope/envelope';
import type { ConsumerDefinition } from '../consuming/consumer-definition';
import type { MessageContext } from '../context/message-context';

/**
 * One delivery on its way through the pipeline. Stages fill it in (the envelope and payload after decoding,
 * the transaction after the inbox) and exactly one settles it. Settling is bound to the channel that delivered
 * it: once that channel is gone the broker has requeued the message and settling is a no-op.
 */
export class InboundDelivery {
  readonly receivedAt = Date.now();
  readonly abort = new AbortController();
  envelope?: Envelope;
  attempt = 1;
  payload?: unknown;
  manager?: EntityManager;
  private settled = false;

  constructor(
    readonly raw: ConsumeMessage,
    readonly consumer: ConsumerDefinition,
    private readonly channel: Channel,
  ) {}

  get isSettled(): boolean {
    return this.settled;
  }

  /** Acknowledges once; false when already settled or the channel is gone. */
  ack(): boolean {
    return this.settle(() => this.channel.ack(this.raw));
  }

  /** Negatively acknowledges once; with `requeue` the broker delivers it again. */
  nack(requeue: boolean): boolean {
    return this.settle(() => this.channel.nack(this.raw, false, requeue));
  }

  /** The context handed to the handler. Requires the envelope, so only valid after decoding. */
  toContext(): MessageContext {
    if (!this.envelope) throw new Error('the envelope is read before the handler runs');
    return {
      envelope: this.envelope,
      attempt: this.attempt,
      redelivered: this.raw.fields.redelivered,
      queue: this.consumer.queue,
      consumer: this.consumer.name,
      raw: this.raw,
      signal: this.abort.signal,
      manager: this.manager,
    };
  }

  private settle(action: () => void): boolean {
    if (this.settled) return false;
    this.settled = true;
    try {
      action();
      return true;
    } catch {
      // NOTE: amqplib throws IllegalOperationError when the channel has closed; the broker requeues then.
      return false;
    }
  }
}
