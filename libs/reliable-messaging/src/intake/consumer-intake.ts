import type { Channel } from 'amqplib';

/** What an intake needs of a delivery (an InboundDelivery, seen from here). */
export interface IntakeDelivery {
  readonly isSettled: boolean;
  /** Released while still unsettled, for its channel's close to return. */
  readonly leftUnsettled: boolean;
  /** Gives up the delivery without settling it; the channel's close returns it. */
  release(): void;
  /** Negatively acknowledges it once; with `requeue` the broker delivers it again. */
  nack(requeue: boolean): boolean;
}

/** What a consumer's intake works with in its consumer (ConsumerRunner). */
export interface IntakeConsumer<D extends IntakeDelivery> {
  /** `Class.method`, for logs. */
  readonly name: string;
  /** The channel the consumer reads now; undefined while it has none. */
  currentChannel(): Channel | undefined;
  /** Whether the consumer stops, or the app has begun shutting down. */
  isStopping(): boolean;
  /** Runs the delivery through the consumer's pipeline. */
  handle(delivery: D): Promise<void>;
  /** Cancels the subscription, if any; resolves with the channel it was on. */
  cancel(): Promise<Channel | undefined>;
  /** Sends the acknowledgements batched on the consumer's channel. */
  flushAcks(): void;
}

/** One consumer's side of its intake: how it runs a delivery once it has a slot, and how it stops fetching. */
export interface RunningIntake<D extends IntakeDelivery> {
  /** Runs a delivery of `channel` once it has its concurrency slot. */
  run(channel: Channel, delivery: D): Promise<void>;
  /**
   * Stops taking messages, at the start of the consumer's stop; resolves with the channel to close once the
   * deliveries in flight have settled (or the deadline passed).
   */
  stopFetching(): Promise<Channel | undefined>;
}

/**
 * How a consumer takes messages from its queue and gives them back: ordered (ordered-intake.ts) or unordered
 * (unordered-intake.ts). Chosen once, where the consumer's plan is resolved (ordering/ordering-plan.ts); the
 * runner, the deliveries, the retry stages, the failure handler and the metrics ask it, and none of them reads
 * the consumer's ordering to decide.
 */
export interface IntakeStrategy {
  /**
   * Whether a failed attempt is retried in place, the delivery held through every attempt and backoff, rather
   * than as a copy through the delay levels; a redelivery is then bounded by the broker's count, not by a count
   * carried on a copy.
   */
  readonly retriesInPlace: boolean;
  /** Where a delivery held by the module goes back, for logs: `returnHeld`. */
  readonly heldReturnsTo: string;
  /**
   * Gives a delivery back to the broker unacknowledged: its pipeline failed, or the publish that would settle it
   * could not be made in time.
   */
  giveBack(delivery: IntakeDelivery): void;
  /**
   * Gives back a delivery the module held (through an outage, or when shutdown interrupts the wait) without
   * costing it an attempt or a redelivery; `sendCopy` publishes a fresh copy to its queue and settles the original.
   */
  returnHeld(delivery: IntakeDelivery, sendCopy: () => Promise<void>): Promise<void>;
  /** The intake of one consumer, made once by its runner. */
  attach<D extends IntakeDelivery>(consumer: IntakeConsumer<D>): RunningIntake<D>;
}
