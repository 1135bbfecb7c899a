import { Logger } from '@nestjs/common';
import type { Channel, ChannelModel, ConsumeMessage, MessageProperties } from 'amqplib';
import type { AmqpConnection } from '../amqp/amqp-connection.service';
import type { TopologyService } from '../amqp/topology.service';
import { InboundDelivery } from '../pipeline/inbound-delivery';
import type { MessageHandler } from '../pipeline/message-middleware';
import { fullJitterDelay, sleep } from '../util/backoff';
import { errorMessage } from '../util/error-text';
import { consumerTimeoutArguments } from '../flow-control/consumer-timeout';
import { maxDeadlineMs } from '../options/deadline-limits';
import type { ConsumerPlan } from './consumer-plan';
import { AckBatcher } from './ack-batcher';
import { ConcurrencySlots } from './concurrency-slots';
import { sharedAbortController } from '../util/shared-abort';
import { enteredQueueAt, type QueueAgeSample } from '../metrics/queue-age';
import type { RunningIntake } from '../intake/consumer-intake';

const RESUBSCRIBE_BASE_MS = 200;
const RESUBSCRIBE_CAP_MS = 10_000;

/** What a consumer is doing, for health and metrics. */
export interface ConsumerStatus {
  name: string;
  queue: string;
  consuming: boolean;
  /** Deliveries in the pipeline now. */
  inFlight: number;
  /** Deliveries that left the pipeline (handled, retried, dead-lettered or given back) since the app started. */
  completed: number;
}

/** How a drain ended: how many handlers finished and how many were still running at the deadline. */
export interface DrainResult {
  completed: number;
  abandoned: number;
}

/**
 * One consumer's life on its own channel: subscribe with its prefetch, run each delivery through the pipeline
 * with bounded concurrency, resubscribe when the server cancels it or its channel fails, and drain on stop. How a
 * delivery runs once it has its slot, and how the consumer stops fetching, is its plan's intake's
 * (intake/consumer-intake.ts).
 */
export class ConsumerRunner {
  private readonly logger = new Logger('ReliableMessaging');
  /** Bounds the deliveries in the pipeline at once; a finished one's slot goes to the longest waiting. */
  private readonly slots: ConcurrencySlots;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly deliveries = new Set<InboundDelivery>();
  /**
   * The last delivery's properties and when it came, for the queue's age estimate: two field writes per delivery,
   * and nothing kept alive but the properties (not the body, nor the channel).
   */
  private lastProperties?: MessageProperties;
  private lastReceivedAt?: number;
  private channel?: Channel;
  /** Batches the acks of `channel`. */
  private acks?: AckBatcher;
  private consumerTag?: string;
  private stopping = false;
  private completed = 0;
  private recovering = false;
  private model?: ChannelModel;
  private lifecycle: Promise<void> = Promise.resolve();
  /** Aborted when the drain begins: deliveries held for an outage go back to their queue at once. */
  private readonly draining = sharedAbortController();
  private readonly holdLimitMs: number;
  /** How this consumer runs a delivery and stops fetching: its plan's intake (intake/consumer-intake.ts). */
  private readonly intake: RunningIntake<InboundDelivery>;

  constructor(
    readonly definition: ConsumerPlan,
    private readonly handler: MessageHandler,
    private readonly connection: AmqpConnection,
    private readonly topology: TopologyService,
    /** The broker's acknowledgement timeout for this consumer, sent where the broker supports it. */
    private readonly consumerTimeoutMs?: number,
    /**
     * Aborts when the app starts shutting down, before `stop()`: the intake takes the consumer as stopping from
     * then on (an ordered one starts nothing more, and leaves a message given back for the stop's channel close
     * rather than resubscribing).
     */
    private readonly appStopping: AbortSignal = new AbortController().signal,
  ) {
    this.slots = new ConcurrencySlots(definition.concurrency);
    this.intake = definition.intake.attach({
      name: definition.name,
      currentChannel: () => this.channel,
      isStopping: () => this.stopping || this.appStopping.aborted,
      handle: (delivery) => this.handler(delivery),
      cancel: () => this.cancel(),
      flushAcks: () => this.acks?.flush(),
    });
    this.holdLimitMs =
      consumerTimeoutMs === undefined ? Number.POSITIVE_INFINITY : maxDeadlineMs(consumerTimeoutMs);
  }

  get status(): ConsumerStatus {
    return {
      name: this.definition.name,
      queue: this.definition.queue,
      consuming: this.consumerTag !== undefined,
      inFlight: this.inFlight.size,
      completed: this.completed,
    };
  }

  /**
   * The publish times the queue's oldest-message age is estimated from (metrics/queue-age.ts), worked out here on
   * each scrape so that a delivery costs nothing more than keeping a reference to the last one.
   */
  get ageSample(): QueueAgeSample {
    let oldestHeldAt: number | undefined;
    for (const delivery of this.deliveries) {
      if (delivery.isSettled) continue;
      // Without a timestamp, the receipt is the latest it can have entered the queue.
      const at = enteredQueueAt(delivery.raw.properties) ?? delivery.receivedAt;
      if (oldestHeldAt === undefined || at < oldestHeldAt) oldestHeldAt = at;
    }
    const last = this.lastProperties;
    return {
      oldestHeldAt,
      lastDeliveredAt: last && enteredQueueAt(last),
      lastReceivedAt: this.lastReceivedAt,
    };
  }

  /** Opens the consumer's channel on this connection and subscribes. Called after every (re)connection. */
  start(model: ChannelModel): Promise<void> {
    return this.serially(() => this.open(model));
  }

  /**
   * Stops fetching as its intake does (an unordered consumer cancels its subscription, an ordered one keeps it
   * and starts nothing more) and waits for in-flight handlers up to the deadline, then closes the channel; the
   * broker requeues whatever was not acknowledged by then.
   */
  async stop(deadline: number): Promise<DrainResult> {
    this.stopping = true;
    this.draining.abort();
    const before = this.completed;
    // In turn with (re)subscriptions: one already under way finishes first and is cancelled here; any later one
    // sees `stopping` and subscribes nothing.
    const channel = await this.serially(() => this.intake.stopFetching());
    const remaining = Math.max(0, deadline - Date.now());
    // The deadline timer is cancelled once the drain ends, so it cannot hold the process open after shutdown.
    const drained = new AbortController();
    await Promise.race([Promise.allSettled([...this.inFlight]), sleep(remaining, drained.signal)]);
    drained.abort();
    const abandoned = this.inFlight.size;
    const reason = new Error('the shutdown deadline passed; this delivery goes back to the broker');
    for (const delivery of this.deliveries) {
      delivery.release();
      delivery.abort.abort(reason);
    }
    this.channel = undefined;
    this.consumerTag = undefined;
    this.acks?.flush();
    if (channel) await channel.close().catch(() => undefined);
    return { completed: this.completed - before, abandoned };
  }

  private async open(model: ChannelModel): Promise<void> {
    if (this.stopping || (this.model === model && this.channel)) return;
    this.consumerTag = undefined;
    const channel = await model.createChannel();
    this.model = model;
    this.channel = channel;
    this.acks = new AckBatcher(channel);
    channel.on('error', (error: Error) =>
      this.logger.warn(`${this.definition.name}: channel error: ${errorMessage(error)}`),
    );
    channel.once('close', () => this.onChannelClosed(channel));
    await channel.prefetch(this.definition.prefetch);
    await this.subscribe(channel);
  }

  /**
   * Runs subscription changes one at a time, so a reconnect and a resubscribe never open two channels and no
   * subscription slips past `stop()`.
   */
  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.lifecycle.then(work);
    this.lifecycle = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  /** Cancels the subscription, if any; resolves with the channel it was on. */
  private async cancel(): Promise<Channel | undefined> {
    const { channel, consumerTag } = this;
    this.consumerTag = undefined;
    if (channel && consumerTag) await channel.cancel(consumerTag).catch(() => undefined);
    return channel;
  }

  private async subscribe(channel: Channel): Promise<void> {
    if (this.stopping) return;
    const reply = await channel.consume(
      this.definition.queue,
      (message) => this.onMessage(channel, message),
      {
        noAck: false,
        arguments:
          this.consumerTimeoutMs === undefined
            ? undefined
            : consumerTimeoutArguments(channel.connection.serverProperties.version, this.consumerTimeoutMs),
      },
    );
    this.consumerTag = reply.consumerTag;
  }

  private onMessage(channel: Channel, message: ConsumeMessage | null): void {
    if (message === null) {
      this.consumerTag = undefined;
      this.logger.warn(
        `${this.definition.name}: the broker cancelled the subscription to ${this.definition.queue}; resubscribing`,
      );
      void this.recover();
      return;
    }
    const acks = this.channel === channel ? this.acks : undefined;
    acks?.track(message);
    const delivery = new InboundDelivery(
      message,
      this.definition,
      channel,
      acks,
      this.draining.signal,
      this.holdLimitMs,
    );
    this.lastProperties = message.properties;
    this.lastReceivedAt = delivery.receivedAt;
    const finished = (): void => {
      this.completed++;
      this.inFlight.delete(task);
      this.deliveries.delete(delivery);
    };
    const task: Promise<void> = this.slots
      .run(() => this.intake.run(channel, delivery))
      .then(finished, (error: unknown) => {
        try {
          this.logger.error(`${this.definition.name}: pipeline failed: ${errorMessage(error)}`);
          delivery.giveBack();
        } finally {
          finished();
        }
      });
    this.inFlight.add(task);
    this.deliveries.add(delivery);
  }

  private onChannelClosed(channel: Channel): void {
    // The broker has requeued every unacknowledged delivery of the channel: nothing may retry or dead-letter
    // them any more, or the message would exist twice.
    for (const delivery of this.deliveries) if (delivery.deliveredOn(channel)) delivery.release();
    if (this.channel !== channel) return;
    this.channel = undefined;
    this.consumerTag = undefined;
    // NOTE: amqplib closes every channel before it reports the connection closed; wait a turn so a dying
    // connection is not mistaken for a channel failure (the reconnect restarts the consumer then).
    setImmediate(() => {
      if (this.stopping || this.channel || this.connection.model !== this.model) return;
      this.logger.warn(`${this.definition.name}: channel closed while the connection is up; reopening`);
      void this.recover();
    });
  }

  /** Declares the queue again and resubscribes, with backoff, until it works or the connection goes away. */
  private async recover(): Promise<void> {
    if (this.recovering) return;
    this.recovering = true;
    try {
      for (let attempt = 1; !this.stopping; attempt++) {
        const model = this.connection.model;
        if (!model) return;
        try {
          await this.topology.declareOne(model, this.definition);
          await this.serially(async () => {
            if (this.channel && this.consumerTag === undefined) await this.subscribe(this.channel);
            else if (!this.channel) await this.open(model);
          });
          this.logger.log(
            this.stopping
              ? `${this.definition.name}: stopping; not resubscribing to ${this.definition.queue}`
              : `${this.definition.name}: resubscribed to ${this.definition.queue}`,
          );
          return;
        } catch (error) {
          const delay = fullJitterDelay(attempt, RESUBSCRIBE_BASE_MS, RESUBSCRIBE_CAP_MS);
          this.logger.warn(
            `${this.definition.name}: resubscribing failed (${errorMessage(error)}); retrying in ${delay} ms`,
          );
          await sleep(delay);
        }
      }
    } finally {
      this.recovering = false;
    }
  }
}
