import { Logger } from '@nestjs/common';
import type { Channel } from 'amqplib';
import { errorMessage } from '../util/error-text';
import type { IntakeConsumer, IntakeDelivery, IntakeStrategy, RunningIntake } from './consumer-intake';

const logger = new Logger('ReliableMessaging');

/**
 * The intake of an ordered consumer (`ordering: 'queue'` or by key): one message at a time in its queue's (or
 * partition's) order, and nothing passes a message that went back to the broker.
 *
 * A delivery goes back unacknowledged, never requeued: a requeue could let a message already on its way to this
 * consumer pass it, or hand it straight back to a consumer that is stopping. The channel's close returns it and
 * every message fetched after it in delivery order (seen on RabbitMQ 3.10), so the consumer starts nothing
 * delivered after it on that channel and closes the channel (see `OrderedRun`).
 */
export const orderedIntake: IntakeStrategy = {
  retriesInPlace: true,
  heldReturnsTo: 'the head of its queue',
  giveBack: (delivery) => delivery.release(),
  // A fresh copy at the tail would let the later messages of its key pass it; the ones held behind it follow it.
  returnHeld: async (delivery) => delivery.release(),
  attach: (consumer) => new OrderedRun(consumer),
};

class OrderedRun<D extends IntakeDelivery> implements RunningIntake<D> {
  /**
   * The channel on which a delivery went back to the broker (left unacknowledged): nothing it delivered
   * afterwards starts, and its close returns them all in delivery order.
   */
  private givenBackOn?: Channel;

  constructor(private readonly consumer: IntakeConsumer<D>) {}

  /**
   * Runs a delivery once it has the slot: not once the consumer or the app stops, and not after one delivered
   * before it on the same channel went back to the broker. After one goes back, this closes the channel at once,
   * outside a stop, and the consumer resubscribes; a stop closes it anyway.
   */
  async run(channel: Channel, delivery: D): Promise<void> {
    const { consumer } = this;
    if (delivery.isSettled) return;
    if (consumer.isStopping() || this.givenBackOn === channel) return delivery.release();
    try {
      await consumer.handle(delivery);
    } catch (error) {
      // Within the slot, so the next delivery cannot start before this one is given back.
      logger.error(`${consumer.name}: pipeline failed: ${errorMessage(error)}`);
      orderedIntake.giveBack(delivery);
    }
    if (!delivery.leftUnsettled) return;
    this.givenBackOn = channel;
    if (consumer.isStopping() || consumer.currentChannel() !== channel) return;
    logger.warn(
      `${consumer.name}: a message went back to the broker; closing the channel so that it and the ones fetched after it are delivered again in order`,
    );
    consumer.flushAcks();
    await channel.close().catch(() => undefined);
  }

  /**
   * Keeps the subscription until the channel closes; the consumer starts nothing more meanwhile. On a
   * single-active-consumer queue the broker activates the next consumer as soon as the active one cancels,
   * whatever it still holds unacknowledged: another replica would start on the next message of the queue while
   * this one still runs the message before it, and a message handed back after the cancel would come after the
   * ones that replica already took. Closing the channel instead returns everything unacknowledged in delivery
   * order (seen on RabbitMQ 3.10) before the next consumer gets anything.
   */
  stopFetching(): Promise<Channel | undefined> {
    return Promise.resolve(this.consumer.currentChannel());
  }
}
