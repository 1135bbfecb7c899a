import type { Channel } from 'amqplib';
import type { IntakeConsumer, IntakeDelivery, IntakeStrategy, RunningIntake } from './consumer-intake';

/**
 * The intake of an unordered consumer (the default): deliveries run in parallel up to its concurrency. A delivery
 * given back is requeued at once (basic.nack with requeue); one the module held goes back as a fresh copy at the
 * tail, so that it spends no redelivery; a failed attempt is retried through the delay levels.
 */
export const unorderedIntake: IntakeStrategy = {
  retriesInPlace: false,
  heldReturnsTo: 'its queue',
  giveBack: (delivery) => {
    delivery.nack(true);
  },
  returnHeld: (_delivery, sendCopy) => sendCopy(),
  attach: (consumer) => new UnorderedRun(consumer),
};

class UnorderedRun<D extends IntakeDelivery> implements RunningIntake<D> {
  constructor(private readonly consumer: IntakeConsumer<D>) {}

  run(_channel: Channel, delivery: D): Promise<void> {
    // A delivery released while it waited for a slot (its channel closed) is the broker's again.
    return delivery.isSettled ? Promise.resolve() : this.consumer.handle(delivery);
  }

  /** Cancels the subscription first, so the broker sends nothing more while the deliveries in flight drain. */
  stopFetching(): Promise<Channel | undefined> {
    return this.consumer.cancel();
  }
}
