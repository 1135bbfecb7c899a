import type { Channel, ConsumeMessage } from 'amqplib';
import type { EntityManager } from 'typeorm';
import type { Envelope } from '../envelope/envelope';
import type { ConsumerPlan } from '../consuming/consumer-plan';
import type { HandlerDeadline } from '../flow-control/handler-deadline';
import type { AckBatcher } from '../consuming/ack-batcher';
import { AttemptAbort } from './attempt-abort';
import { DeliveryContext } from './delivery-context';

/**
 * One delivery on its way through the pipeline. Stages fill it in (the envelope and payload after decoding,
 * the transaction after the inbox) and exactly one settles it. Settling is bound to the channel that delivered
 * it: once that channel is gone the broker has requeued the message and settling is a no-op.
 */
export class InboundDelivery {
  readonly receivedAt = Date.now();
  /** How the current attempt is abandoned; a new one per attempt. */
  private attemptAbort = new AttemptAbort();
  envelope?: Envelope;
  attempt = 1;
  /**
   * How many times this attempt ran again at once after losing a race for a row it writes (a saga step's
   * instance, saga/saga-conflict.middleware.ts); 0 on its first run. Kept across `retryInPlace()`.
   */
  reruns = 0;
  payload?: unknown;
  /** The full body a claim check kept in its store, once the claim-check stage has read it; decoded instead of the wire body. */
  claimedBody?: Buffer;
  manager?: EntityManager;
  /** The handler's deadline, set by the deadline stage. */
  deadline?: HandlerDeadline;
  /** What the handler returned, kept for a reply consumer's reply once it has returned; undefined until then. */
  handlerResult?: { value: unknown };
  /**
   * Makes the handler's context in place of a plain DeliveryContext, for a stage whose handler gets more (the saga
   * stage's SagaStepContext); set by that stage for its run.
   */
  contextFactory?: (...args: ConstructorParameters<typeof DeliveryContext>) => DeliveryContext;
  /** The latest run of the user's handler, set when it starts. */
  handlerRun?: Promise<unknown>;
  /**
   * Work that outlived the attempt (a handler past its deadline), set when the deadline fires: the delivery is
   * settled only after it ends (or at `holdUntil`), and its concurrency slot stays taken until it ends.
   */
  lingering?: Promise<void>;
  /** Past this instant (epoch ms) the delivery must be settled before the broker's consumer timeout. */
  readonly holdUntil: number;
  private settled = false;
  /** Released while still unsettled: left for its channel's close to return (see `leftUnsettled`). */
  private left = false;

  constructor(
    readonly raw: ConsumeMessage,
    readonly consumer: ConsumerPlan,
    private readonly channel: Channel,
    /** Sends this channel's acks in batches; without it each ack is sent at once. */
    private readonly acks?: AckBatcher,
    /** Aborts when the consumer starts draining: a held delivery goes back to its queue then. */
    readonly stopping: AbortSignal = new AbortController().signal,
    /** How long after its arrival the delivery may be held unsettled. Default: unbounded. */
    holdLimitMs = Number.POSITIVE_INFINITY,
  ) {
    this.holdUntil = this.receivedAt + holdLimitMs;
  }

  /** Abandons the current attempt's handler (its deadline, or shutdown past its deadline); a new one per attempt. */
  get abort(): AttemptAbort {
    return this.attemptAbort;
  }

  get isSettled(): boolean {
    return this.settled;
  }

  /** Whether `channel` delivered this message. */
  deliveredOn(channel: Channel): boolean {
    return this.channel === channel;
  }

  /** Acknowledges once; false when already settled or the channel is gone. */
  ack(): boolean {
    if (this.settled) return false;
    this.settled = true;
    try {
      if (this.acks) this.acks.ack(this.raw);
      else this.channel.ack(this.raw);
      return true;
    } catch {
      // NOTE: amqplib throws IllegalOperationError when the channel has closed; the broker requeues then.
      return false;
    }
  }

  /** Negatively acknowledges once; with `requeue` the broker delivers it again. */
  nack(requeue: boolean): boolean {
    return this.settle(() =>
      this.acks ? this.acks.nack(this.raw, requeue) : this.channel.nack(this.raw, false, requeue),
    );
  }

  /**
   * Gives up the delivery without settling it: its channel closed or is about to (shutdown past its deadline),
   * and the broker requeues it. From here on nothing acts on it: no ack, no retry, no dead letter.
   */
  release(): void {
    if (!this.settled) this.left = true;
    this.settled = true;
  }

  /**
   * Gives the delivery back to the broker unacknowledged, as its consumer's intake does: at once (basic.nack with
   * requeue), or, for an ordered consumer, left for its channel's close, which returns it and every message
   * fetched after it in delivery order (intake/ordered-intake.ts).
   */
  giveBack(): void {
    this.consumer.intake.giveBack(this);
  }

  /**
   * Whether the delivery was released unsettled, for its channel's close to return to the broker: an ordered
   * consumer then starts nothing fetched after it and closes the channel (intake/ordered-intake.ts).
   */
  get leftUnsettled(): boolean {
    return this.left;
  }

  /**
   * Starts attempt `attempt` of this same delivery, for a retry in place (an ordered consumer keeping its order,
   * or the same attempt again after a database outage): the previous run's signal, deadline and transaction are
   * left behind; the envelope and payload stay.
   */
  retryInPlace(attempt: number): void {
    this.attempt = attempt;
    this.attemptAbort = new AttemptAbort();
    this.deadline = undefined;
    this.manager = undefined;
    this.handlerRun = undefined;
    this.handlerResult = undefined;
    this.lingering = undefined;
    this.contextFactory = undefined;
  }

  /** The context handed to the handler. Requires the envelope, so only valid after decoding. */
  toContext(): DeliveryContext {
    if (!this.envelope) throw new Error('the envelope is read before the handler runs');
    return (this.contextFactory ?? newDeliveryContext)(
      this.envelope,
      this.attempt,
      this.consumer.queue,
      this.consumer.name,
      this.raw,
      this.manager,
      this.attemptAbort,
      this,
    );
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

/** What a delivery's context is without a stage's own: a plain DeliveryContext. */
function newDeliveryContext(...args: ConstructorParameters<typeof DeliveryContext>): DeliveryContext {
  return new DeliveryContext(...args);
}
